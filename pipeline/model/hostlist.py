"""RFC 29 hostlists: ``"compute-[01-04]"`` ⇄ lists of hostnames.

An RFC 29 hostlist is an *ordered* list that may repeat hosts: rank *i* of an
R object is the *i*-th host of its expanded nodelist. ClusterShell's
:class:`NodeSet` is a sorted *set* (``NodeSet("b1,a1")`` reorders), so:

* :func:`expand_hostlist` / :func:`encode_hostlist` keep order and repeats,
  exactly like Flux's ``hostlist_decode``/``hostlist_encode``;
* :func:`unique_hostlist` and :func:`hostset` are for sets (membership,
  folding a result for display) and use NodeSet.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence

from ClusterShell.NodeSet import NodeSet, NodeSetException

from pipeline.errors import HostlistError

_TRAILING_DIGITS = re.compile(r"^(.*?)([0-9]+)$")
_BAD_HOST_CHARS = re.compile(r"[\s\[\],]")
_RANGE = re.compile(r"^([0-9]+)(?:-([0-9]+))?$")


def _split_top_level(text: str) -> list[str]:
    """Split ``text`` on commas that are outside brackets."""
    terms: list[str] = []
    depth = 0
    start = 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"invalid hostlist {text!r}: nested '['")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"invalid hostlist {text!r}: unbalanced ']'")
        elif char == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise HostlistError(f"invalid hostlist {text!r}: unbalanced '['")
    terms.append(text[start:])
    return terms


def _expand_ranges(text: str, body: str) -> list[str]:
    """Expand a bracket body such as ``"01-03,7"`` in the order written."""
    out: list[str] = []
    for part in body.split(","):
        match = _RANGE.match(part)
        if match is None:
            raise HostlistError(f"invalid hostlist {text!r}: bad range {part!r} in brackets")
        lo_text, hi_text = match.group(1), match.group(2)
        width = len(lo_text)
        lo = int(lo_text)
        hi = int(hi_text) if hi_text is not None else lo
        if hi < lo:
            raise HostlistError(f"invalid hostlist {text!r}: range {part!r} is decreasing")
        out.extend(str(n).zfill(width) for n in range(lo, hi + 1))
    return out


def _expand_term(text: str, term: str) -> list[str]:
    if not term:
        raise HostlistError(f"invalid hostlist {text!r}: empty hostname")
    pieces = re.split(r"(\[[^\]]*\])", term)
    choices: list[list[str]] = []
    for piece in pieces:
        if piece.startswith("["):
            choices.append(_expand_ranges(text, piece[1:-1]))
        elif piece:
            if _BAD_HOST_CHARS.search(piece):
                raise HostlistError(f"invalid hostlist {text!r}: bad characters in {term!r}")
            choices.append([piece])
    return ["".join(combo) for combo in itertools.product(*choices)]


def expand_hostlist(text: str | Sequence[str]) -> list[str]:
    """Return the hosts of an RFC 29 hostlist in order, repeats kept.

    ``text`` may also be a list of hostlist strings (the form of R's
    ``nodelist``); their expansions are concatenated.
    """
    if isinstance(text, str):
        if text == "":
            return []
        hosts: list[str] = []
        for term in _split_top_level(text):
            hosts.extend(_expand_term(text, term))
        return hosts
    if not isinstance(text, Sequence):
        raise HostlistError(f"hostlist must be a string or list of strings, got {text!r}")
    result: list[str] = []
    for entry in text:
        if not isinstance(entry, str):
            raise HostlistError(f"hostlist entries must be strings, got {entry!r}")
        result.extend(expand_hostlist(entry))
    return result


def _split_host(host: str) -> tuple[str, str | None]:
    match = _TRAILING_DIGITS.match(host)
    if match is None:
        return host, None
    return match.group(1), match.group(2)


def encode_hostlist(hosts: Iterable[str]) -> str:
    """Return the RFC 29 string of ``hosts``, keeping their order and repeats.

    Adjacent hosts with a common prefix and consecutive numbers fold into a
    range, and adjacent ranges with the same prefix share one bracket:
    ``["c1", "c2", "c3", "c7"]`` → ``"c[1-3,7]"``, ``["b1", "a1"]`` → ``"b1,a1"``.
    """
    # groups: list of (prefix, [ranges]); a range is [lo, hi, width, lo_text]
    groups: list[tuple[str, list[list[int]]]] = []
    for host in hosts:
        if not isinstance(host, str) or not host or _BAD_HOST_CHARS.search(host):
            raise HostlistError(f"invalid hostname {host!r}")
        prefix, digits = _split_host(host)
        if digits is None:
            groups.append((host, []))
            continue
        number, width = int(digits), len(digits)
        if groups and groups[-1][0] == prefix and groups[-1][1]:
            ranges = groups[-1][1]
            last = ranges[-1]
            if number == last[1] + 1 and str(number).zfill(last[2]) == digits:
                last[1] = number
                continue
            ranges.append([number, number, width])
            continue
        groups.append((prefix, [[number, number, width]]))
    parts: list[str] = []
    for prefix, ranges in groups:
        if not ranges:
            parts.append(prefix)
        elif len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            parts.append(prefix + str(ranges[0][0]).zfill(ranges[0][2]))
        else:
            inner = ",".join(
                str(lo).zfill(width)
                if lo == hi
                else f"{str(lo).zfill(width)}-{str(hi).zfill(width)}"
                for lo, hi, width in ranges
            )
            parts.append(f"{prefix}[{inner}]")
    return ",".join(parts)


def hostset(hosts: str | Iterable[str]) -> NodeSet:
    """Return a ClusterShell NodeSet (sorted, unique) of a hostlist or of hosts."""
    names = expand_hostlist(hosts) if isinstance(hosts, str) else list(hosts)
    try:
        return NodeSet.fromlist(names) if names else NodeSet()
    except NodeSetException as exc:
        raise HostlistError(f"invalid hostnames {names!r}: {exc}") from exc


def unique_hostlist(hosts: str | Iterable[str]) -> str:
    """Return the sorted, de-duplicated, folded form: ``"compute-[01-04]"``."""
    return str(hostset(hosts))


def unique_in_order(hosts: Iterable[str]) -> list[str]:
    """Return ``hosts`` without repeats, keeping the first occurrence's position."""
    return list(dict.fromkeys(hosts))

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

#: The most hosts a hostlist may expand to in memory: far above El Capitan's 11,136
#: computes and 696 rabbits, far below what would exhaust a service node's memory.
MAX_HOSTS = 200_000


def _shown(text: object) -> str:
    """``text`` as an error message quotes it: cut to 60 characters."""
    shown = repr(text)
    return shown if len(shown) <= 60 else shown[:56] + "...'"


_TRAILING_DIGITS = re.compile(r"^(.*?)([0-9]+)$")
_BAD_HOST_CHARS = re.compile(r"[\s\[\],]")
_RANGE = re.compile(r"^([0-9]{1,18})(?:-([0-9]{1,18}))?$")


def _split_top_level(text: str) -> list[str]:
    """Split ``text`` on commas that are outside brackets."""
    terms: list[str] = []
    depth = 0
    start = 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"invalid hostlist {_shown(text)}: nested '['")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"invalid hostlist {_shown(text)}: unbalanced ']'")
        elif char == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise HostlistError(f"invalid hostlist {_shown(text)}: unbalanced '['")
    terms.append(text[start:])
    return terms


def _expand_ranges(text: str, body: str) -> list[str]:
    """Expand a bracket body such as ``"01-03,7"`` in the order written."""
    out: list[str] = []
    for part in body.split(","):
        match = _RANGE.match(part)
        if match is None:
            raise HostlistError(
                f"invalid hostlist {_shown(text)}: bad range {_shown(part)} in brackets"
            )
        lo_text, hi_text = match.group(1), match.group(2)
        width = len(lo_text)
        lo = int(lo_text)
        hi = int(hi_text) if hi_text is not None else lo
        if hi < lo:
            raise HostlistError(
                f"invalid hostlist {_shown(text)}: range {_shown(part)} is decreasing"
            )
        out.extend(str(n).zfill(width) for n in range(lo, hi + 1))
    return out


def _size(text: str, body: str) -> int:
    """How many hosts a bracket body such as ``"01-03,7"`` names (checked, not expanded)."""
    total = 0
    for part in body.split(","):
        match = _RANGE.match(part)
        if match is None:
            raise HostlistError(
                f"invalid hostlist {_shown(text)}: bad range {_shown(part)} in brackets"
            )
        lo, hi = int(match.group(1)), int(match.group(2) or match.group(1))
        total += max(hi - lo + 1, 0)
    return total


def _term_size(text: str, term: str) -> int:
    size = 1
    for piece in re.split(r"(\[[^\]]*\])", term):
        if piece.startswith("["):
            size *= _size(text, piece[1:-1])
    return size


def _expand_term(text: str, term: str) -> list[str]:
    if not term:
        raise HostlistError(f"invalid hostlist {_shown(text)}: empty hostname")
    pieces = re.split(r"(\[[^\]]*\])", term)
    choices: list[list[str]] = []
    for piece in pieces:
        if piece.startswith("["):
            choices.append(_expand_ranges(text, piece[1:-1]))
        elif piece:
            if _BAD_HOST_CHARS.search(piece):
                raise HostlistError(
                    f"invalid hostlist {_shown(text)}: bad characters in {_shown(term)}"
                )
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
        terms = _split_top_level(text)
        _bound(text, sum(_term_size(text, term) for term in terms))
        hosts: list[str] = []
        for term in terms:
            hosts.extend(_expand_term(text, term))
        return hosts
    if not isinstance(text, Sequence):
        raise HostlistError(f"hostlist must be a string or list of strings, got {_shown(text)}")
    result: list[str] = []
    for entry in text:
        if not isinstance(entry, str):
            raise HostlistError(f"hostlist entries must be strings, got {_shown(entry)}")
        result.extend(expand_hostlist(entry))
        _bound("the nodelist", len(result))
    return result


def _bound(text: str, count: int) -> None:
    if count > MAX_HOSTS:
        raise HostlistError(
            f"hostlist {_shown(text)} names {count:,} hosts, more than the {MAX_HOSTS:,} a "
            "hostlist may hold"
        )


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


#: A hostname: ASCII letters, digits, '.', '-' and '_', starting with a letter or digit.
HOSTNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")


def check_hostname(name: str) -> str:
    """``name`` if it is a hostname (:data:`HOSTNAME`); :class:`HostlistError` if not."""
    if not HOSTNAME.fullmatch(name):
        raise HostlistError(
            f"{_shown(name)} is not a hostname: ASCII letters, digits, '.', '-' and '_', "
            "starting with a letter or digit, at most 253"
        )
    return name


def expand_hostnames(text: str) -> list[str]:
    """The hosts of hostlist ``text``, each through :func:`check_hostname`: the one way a
    command takes the names of nodes it writes anything for (an ACL's key patterns, a
    password file's name, a drain); :class:`HostlistError` naming the first that is not,
    or saying that there is none (a command given no node would do nothing, and say so
    with exit 0)."""
    hosts = [check_hostname(host) for host in expand_hostlist(text)]
    if not hosts:
        raise HostlistError("no host given: name the nodes, e.g. compute[1-64]")
    return hosts

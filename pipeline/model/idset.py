"""RFC 22 idsets: ``"0-3,7"`` ⇄ sorted, unique non-negative integers.

ClusterShell's :class:`RangeSet` does the folding and set arithmetic. It is
more permissive than Flux (it accepts zero padding, steps ``0-10/2`` and
spaces), so strings are checked against the RFC 22 grammar first and the
offending text is named when they do not match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from pipeline.errors import IdsetError


def _shown(text: object) -> str:
    """``text`` as an error message quotes it: cut to 60 characters."""
    shown = repr(text)
    return shown if len(shown) <= 60 else shown[:56] + "...'"


_RANGE = r"(?:0|[1-9][0-9]{0,17})(?:-(?:0|[1-9][0-9]{0,17}))?"  # ids below 10**18
_IDSET = re.compile(rf"^(?:{_RANGE}(?:,{_RANGE})*)?$")


#: The most ids an idset may expand to in memory (cores, ranks, the VNI universe of 65,536
#: all fit many times over).
MAX_IDS = 1_000_000


def decode_idset(text: str) -> tuple[int, ...]:
    """Return the ids of an RFC 22 idset string, ascending and unique.

    ``"0-3,7"`` gives ``(0, 1, 2, 3, 7)``; ``""`` gives ``()``. Flux's optional
    surrounding brackets (``"[0-3]"``) are accepted.
    """
    if not isinstance(text, str):
        raise IdsetError(f"idset must be a string, got {type(text).__name__} {_shown(text)}")
    return _decode(text)


@lru_cache(maxsize=4096)
def _decode(text: str) -> tuple[int, ...]:
    body = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    if not _IDSET.match(body):
        raise IdsetError(f"invalid idset {_shown(text)}: expected ids and ranges like '0-3,7'")
    count = 0
    for part in body.split(","):
        lo, _, hi = part.partition("-")
        if hi and int(hi) < int(lo):
            raise IdsetError(f"invalid idset {_shown(text)}: range {_shown(part)} is decreasing")
        count += int(hi) - int(lo) + 1 if hi else 1
    if count > MAX_IDS:
        raise IdsetError(
            f"idset {_shown(text)} names {count:,} ids, more than the {MAX_IDS:,} an idset may hold"
        )
    if not body:
        return ()
    ids: set[int] = set()  # the grammar and the count are checked: expand directly
    for part in body.split(","):
        lo, _, hi = part.partition("-")
        if hi:
            ids.update(range(int(lo), int(hi) + 1))
        else:
            ids.add(int(lo))
    return tuple(sorted(ids))


def encode_idset(ids: Iterable[int]) -> str:
    """Return the RFC 22 string of ``ids`` (any order, repeats allowed): ``"0-3,7"``."""
    values = list(ids)
    if not values:
        return ""
    if not all(type(v) is int for v in values) or min(values) < 0:  # bool is not int here
        bad = next(v for v in values if type(v) is not int or v < 0)
        raise IdsetError(f"idset members must be non-negative integers, got {bad!r}")
    ordered = sorted(set(values))  # runs of consecutive ids, in one pass
    parts: list[str] = []
    start = previous = ordered[0]
    for value in ordered[1:]:
        if value != previous + 1:
            parts.append(f"{start}-{previous}" if previous != start else str(start))
            start = value
        previous = value
    parts.append(f"{start}-{previous}" if previous != start else str(start))
    return ",".join(parts)


def idset_contains(text: str, ident: int) -> bool:
    """Return whether the RFC 22 idset ``text`` contains ``ident``."""
    return ident in set(decode_idset(text))

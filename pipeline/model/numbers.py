"""Taking a number from a user: one way for every option and setting.

A port is 1-65535; a duration is a finite number of seconds, at most
:data:`MAX_SECONDS`; a count is an integer within its bounds, never past
:data:`MAX_COUNT`. Each check raises :class:`ValueError` in words a user can act on;
the command line (``pipeline.cli.common``) and the settings (``pipeline.settings``)
say them as one line.
"""

from __future__ import annotations

import math

#: The longest duration any option or setting takes (s): a year.
MAX_SECONDS = 366 * 86400.0
#: The largest count any option or setting takes (uids, sizes and seeds included).
MAX_COUNT = 2**32 - 1


def port(value: int) -> int:
    """``value`` if it is a TCP port one can listen on or reach: 1-65535."""
    if not 1 <= value <= 65535:
        raise ValueError(f"{value} is not a port: a port is 1-65535")
    return value


def seconds(value: float, *, zero: bool = False, most: float = MAX_SECONDS) -> float:
    """``value`` if it is a finite duration greater than 0 (or 0 itself with ``zero``),
    at most ``most``."""
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{value} is not a duration: give a finite number of seconds")
    if value < 0 or (value == 0 and not zero):
        least = "0 or more" if zero else "more than 0"
        raise ValueError(f"{value:g} is not a duration: give {least} seconds")
    if value > most:
        raise ValueError(f"{value:g} seconds is longer than the most, {most:g}")
    return value


def count(value: int, *, least: int = 0, most: int = MAX_COUNT) -> int:
    """``value`` if it lies in ``least``..``most``."""
    if not least <= value <= most:
        raise ValueError(f"{value} is out of range: give {least}-{most}")
    return value


def finite(value: float, *, most: float = float(MAX_COUNT)) -> float:
    """``value`` if it is a finite number no larger than ``most`` either way."""
    if math.isnan(value) or math.isinf(value) or abs(value) > most:
        raise ValueError(f"{value} is not a finite number within ±{most:g}")
    return value


#: The most digits :func:`natural` reads: enough for any 64-bit number, and far below
#: where Python's ``int`` of a string refuses (4,300 digits) or slows.
MAX_DIGITS = 20


def natural(text: str | bytes, *, most: int = 2**64 - 1) -> int:
    """The whole number ``text`` spells in ASCII digits alone (no sign, no space, no
    Unicode digit such as ``²`` or a fullwidth one, at most :data:`MAX_DIGITS` of them), if it is
    at most ``most``: the one way every number a user, a node or a stored value writes is
    read. Raises :class:`ValueError` saying what is wrong."""
    if isinstance(text, bytes):
        text = text.decode("ascii", "replace")
    shown = text if len(text) <= 40 else text[:39] + "…"
    if not text or not text.isascii() or not text.isdigit():
        raise ValueError(f"{shown!r} is not a whole number: give ASCII digits 0-9 alone")
    if len(text) > MAX_DIGITS:
        raise ValueError(f"{shown!r} has more than {MAX_DIGITS} digits: give at most {most}")
    value = int(text)
    if value > most:
        raise ValueError(f"{value} is out of range: give 0-{most}")
    return value


def natural_or_none(text: str | bytes, *, most: int = 2**64 - 1) -> int | None:
    """:func:`natural`, or None where ``text`` spells no number within ``most``."""
    try:
        return natural(text, most=most)
    except ValueError:
        return None

"""Flux job ids: decimal ⇄ F58 (RFC 19), as Workflows carry them (``spec.jobID``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from pipeline.errors import InputError

#: The largest Flux jobid (an unsigned 64-bit integer, RFC 19).
MAX_JOBID = 2**64 - 1
#: A jobid field of a payload or record: refused outside [0, MAX_JOBID].
JobId = Annotated[int, Field(ge=0, le=MAX_JOBID)]

ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
F58_PREFIX = "ƒ"
F58_PLAIN_PREFIX = "f"


def encode_f58(jobid: int, *, plain: bool = False) -> str:
    """Return the F58 form of ``jobid`` (``ƒ...``, or ``f...`` when ``plain``)."""
    if isinstance(jobid, bool) or not isinstance(jobid, int) or not 0 <= jobid < 2**64:
        raise InputError(f"a Flux jobid is an unsigned 64-bit integer, got {jobid!r}")
    digits = ""
    value = jobid
    while True:
        value, rest = divmod(value, 58)
        digits = ALPHABET[rest] + digits
        if value == 0:
            break
    return (F58_PLAIN_PREFIX if plain else F58_PREFIX) + digits


def decode_jobid(text: str | int) -> int:
    """Parse a jobid given as decimal, ``ƒF58`` or ``fF58``."""
    if isinstance(text, int) and not isinstance(text, bool):
        if not 0 <= text <= MAX_JOBID:
            raise InputError(f"invalid jobid {text}: not an unsigned 64-bit integer")
        return text
    if not isinstance(text, str) or not text:
        raise InputError(f"invalid jobid {_shown(text)}")
    if text.isascii() and text.isdigit():  # Unicode digits (fullwidth, Arabic) name no jobid
        if len(text) > 20 or int(text) >= 2**64:
            raise InputError(f"invalid jobid {_shown(text)}: larger than 64 bits")
        return int(text)
    if text[0] in (F58_PREFIX, F58_PLAIN_PREFIX) and len(text) <= 16:
        value = 0
        for char in text[1:]:
            index = ALPHABET.find(char)
            if index < 0:
                raise InputError(
                    f"invalid jobid {_shown(text)}: {_shown(char)} is not an F58 digit"
                )
            value = value * 58 + index
        if text[1:] and value < 2**64:
            return value
    raise InputError(f"invalid jobid {_shown(text)}: expected decimal or F58 (ƒ... / f...)")


def _shown(text: object) -> str:
    """``text`` as an error message quotes it: cut to 40 characters."""
    shown = repr(text)
    return shown if len(shown) <= 40 else shown[:36] + "...'"

"""Dead letters: messages no process could decode or validate, set aside for an admin.

A message on any queue that is not a message at all (not JSON, not kombu's
envelope), that Celery cannot decode, that names no task we run, that fails
its signature check, or an outbox entry the bridge cannot deliver, is
pushed with its raw bytes onto one bounded Redis list, counted, logged once,
and dropped from its queue: the process goes on with the next.
``coral2-pipeline status`` shows how many and the latest; ``coral2-pipeline
deadletters`` lists them.
"""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict

#: Dead letters kept (the oldest are dropped beyond it); the count keeps counting.
KEEP = 1000
#: Bytes of a message kept in its dead letter (the size says how long it was).
MAX_RAW = 64 * 1024


def list_key(prefix: str) -> str:
    """The Redis list of dead letters (newest first)."""
    return f"{prefix}:deadletters"


def count_key(prefix: str) -> str:
    """The counter of every dead letter ever set aside."""
    return f"{prefix}:deadletters:count"


class DeadLetter(BaseModel):
    """One message set aside."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    at: float  # when it was set aside (epoch s)
    where: str  # the queue it came from, or "outbox"
    reason: str  # why it could not be used
    size: int  # its length in bytes
    raw: str  # its first MAX_RAW bytes, undecodable bytes escaped

    @classmethod
    def of(
        cls,
        where: str,
        raw: bytes | str,
        reason: str,
        at: float | None = None,
        size: int | None = None,
    ) -> DeadLetter:
        """``raw`` set aside from ``where`` for ``reason``; ``size``: its whole length, when
        ``raw`` is only its start (a node's dead letter, cut before it was sent)."""
        data = raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else bytes(raw)
        text = data[:MAX_RAW].decode("utf-8", "backslashreplace")
        return cls(
            at=time.time() if at is None else at,
            where=where[:200],
            reason=reason[:1000],
            size=len(data) if size is None else size,
            raw=text,
        )

"""The dead letters as admins read them (the writers are in ``pipeline.platform.deadletters``)."""

from __future__ import annotations

import pydantic
import redis

from pipeline.model.deadletter import KEEP, DeadLetter, count_key, list_key
from pipeline.store.connection import translated


@translated
class DeadLetters:
    """The bounded list of messages set aside, and the count of every one ever set aside."""

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self.client = client
        self.list_key = list_key(prefix)
        self.count_key = count_key(prefix)

    def add(self, where: str, raw: bytes | str, reason: str, size: int | None = None) -> DeadLetter:
        """Set a message aside that a task refused after decoding it (a node's answer for
        a job or a node the work was not sent to); ``size``: see :meth:`DeadLetter.of`."""
        letter = DeadLetter.of(where, raw, reason, size=size)
        pipe = self.client.pipeline(transaction=True)
        pipe.lpush(self.list_key, letter.model_dump_json())
        pipe.ltrim(self.list_key, 0, KEEP - 1)
        pipe.incr(self.count_key)
        pipe.execute()
        return letter

    def counts(self) -> tuple[int, int]:
        """(kept, ever set aside)."""
        pipe = self.client.pipeline(transaction=False)
        pipe.llen(self.list_key)
        pipe.get(self.count_key)
        kept, total = pipe.execute()
        return int(kept), int(total or 0)

    def latest(self, limit: int) -> list[DeadLetter]:
        """The newest ``limit`` dead letters, newest first (an unreadable one is shown as
        such, not skipped)."""
        raws = self.client.lrange(self.list_key, 0, max(limit, 1) - 1)
        out = []
        for raw in raws:
            try:
                out.append(DeadLetter.model_validate_json(raw))
            except pydantic.ValidationError:
                out.append(DeadLetter.of("?", raw, "(this dead letter itself is unreadable)"))
        return out

    def clear(self) -> int:
        """Drop every kept dead letter (the count stays); return how many were dropped."""
        pipe = self.client.pipeline(transaction=True)
        pipe.llen(self.list_key)
        pipe.delete(self.list_key)
        dropped, _ = pipe.execute()
        return int(dropped)

"""The RFC 44 resource eventlog and journal in Redis.

One stream, ``<prefix>:resource-eventlog``, holds every resource event in the
order it was posted, journal-only events (online, offline, torpid, lively)
included: the journal streams them all, a replay reads the persistent ones.
``<prefix>:resource-R`` holds R as the latest ``resource-define`` set it.

* :meth:`ResourceLog.post` checks each event against RFC 44 before it is
  written: a bad one is refused whole, nothing is posted.
* :meth:`ResourceLog.journal` streams the history in batches, then the sentinel
  (an empty ``events`` array), then live events until the consumer cancels
  (sets its event or closes the generator).
* :meth:`ResourceLog.compact` rewrites the stream as
  :func:`~pipeline.model.resource_events.compact` folds it, under WATCH so that
  an event posted meanwhile is never lost.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import redis

from pipeline.model.resource_events import PERSISTENT, check_event, compact, drained
from pipeline.store.connection import store_errors, translated
from pipeline.store.keys import Keys

#: Events read per round trip.
BATCH = 1_000
#: Events a journal response holds at most, as flux-core sends them.
RESPONSE_EVENTS = 100
#: flux-core's ``[resource] journal-max``: the most events the journal streams.
JOURNAL_MAX = 100_000


@translated
class ResourceLog:
    """The resource eventlog of one deployment."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client = client
        self.stream = keys.resource_eventlog
        self.r_key = keys.resource_r
        self.epoch_key = keys.resource_epoch

    def _do(self, command: str, *args: Any, **kwargs: Any) -> Any:
        # translated here too: the journal and the pages are generators, which the class's
        # boundary (@translated) leaves as they are
        try:
            return getattr(self.client, command)(*args, **kwargs)
        except redis.RedisError as exc:
            raise store_errors(exc) from exc

    def post(self, *events: Mapping[str, Any], r: Mapping[str, Any] | None = None) -> list[str]:
        """Append ``events`` (checked first, all or none); ``r`` is R for a ``resource-define``.

        Returns the stream ids of the new entries.
        """
        checked = [check_event(event) for event in events]
        pipe = self.client.pipeline(transaction=True)
        if r is not None:
            pipe.set(self.r_key, json.dumps(r, separators=(",", ":")))
        restarts = [event for event in checked if event["name"] == "restart"]
        if restarts:
            pipe.set(self.epoch_key, repr(restarts[-1]["timestamp"]))
        for event in checked:
            pipe.xadd(self.stream, {"event": json.dumps(event, separators=(",", ":"))})
        replies = pipe.execute()
        ids = replies[(r is not None) + bool(restarts) :]
        return [i.decode() if isinstance(i, bytes) else str(i) for i in ids]

    def _decode(self, entries: Iterable[tuple[Any, dict[bytes, bytes]]]) -> list[dict[str, Any]]:
        return [json.loads(fields[b"event"]) for _, fields in entries]

    def _pages(self, start: str = "-") -> Iterator[tuple[str, list[dict[str, Any]]]]:
        """(last id, events) of each batch from ``start`` to the end."""
        low = start
        while True:
            entries = self._do("xrange", self.stream, low, "+", count=BATCH)
            if not entries:
                return
            last = entries[-1][0].decode()
            yield last, self._decode(entries)
            if len(entries) < BATCH:
                return
            low = "(" + last

    def events(self, *, persistent_only: bool = False) -> list[dict[str, Any]]:
        """Every event, oldest first (only the eventlog's, with ``persistent_only``)."""
        out = [event for _, page in self._pages() for event in page]
        if persistent_only:
            out = [event for event in out if event.get("name") in PERSISTENT]
        return out

    def since(self, cursor: str, limit: int | None = None) -> tuple[str, list[dict[str, Any]]]:
        """Events after stream id ``cursor`` (``"0"``: all), at most about ``limit`` of
        them, and the id to read on from."""
        events: list[dict[str, Any]] = []
        last = cursor
        for last_id, page in self._pages("(" + cursor if cursor != "0" else "-"):
            events += page
            last = last_id
            if limit is not None and len(events) >= limit:
                break
        return last, events

    def last_timestamp(self) -> float:
        """The newest event's timestamp (0 when the log is empty)."""
        entries = self._do("xrevrange", self.stream, "+", "-", count=1)
        return float(self._decode(entries)[0]["timestamp"]) if entries else 0.0

    def r(self) -> dict[str, Any] | None:
        """R as the latest ``resource-define`` set it."""
        raw = self._do("get", self.r_key)
        return None if raw is None else dict(json.loads(raw))

    def epoch(self) -> str:
        """The latest ``restart``'s timestamp ("" before the first): the Flux incarnation."""
        raw = self._do("get", self.epoch_key)
        return "" if raw is None else str(raw.decode())

    def length(self) -> int:
        """How many events the stream holds."""
        return int(self._do("xlen", self.stream))

    def drained(self, nodelist: str) -> dict[int, tuple[float, str]]:
        """Drained ranks of ``nodelist`` after replaying the eventlog."""
        return drained(self.events(persistent_only=True), nodelist)

    def journal(
        self,
        cancel: threading.Event | None = None,
        block_ms: int = 500,
        journal_max: int = JOURNAL_MAX,
    ) -> Iterator[dict[str, Any]]:
        """RFC 44 journal responses as flux-core 0.88 sends them: the history in batches of
        at most :data:`RESPONSE_EVENTS` — a ``resource-define`` alone, with ``R`` — the
        sentinel (an empty ``events`` array), then live events.

        A history longer than ``journal_max`` starts with a ``truncate`` event (the
        timestamp of the last event left out, no context) followed by the newest
        ``journal_max - 1`` events, as flux-core's journal does once it has dropped its
        oldest. Stops when ``cancel`` is set (or the consumer closes the generator).
        """
        cancel = cancel or threading.Event()
        last = "0-0"
        length = self.length()
        skip = length - (journal_max - 1) if 0 < journal_max < length else 0
        batch: list[dict[str, Any]] = []
        for page_end, page in self._pages():
            if cancel.is_set():
                return
            last = page_end
            for event in page:
                if skip:
                    skip -= 1
                    if not skip:  # the last one left out: its timestamp heads the journal
                        batch.append({"timestamp": event["timestamp"], "name": "truncate"})
                    continue
                if event.get("name") == "resource-define":
                    if batch:
                        yield {"events": batch}
                    batch = []
                    yield self._response([event])
                    continue
                batch.append(event)
                if len(batch) >= RESPONSE_EVENTS:
                    yield {"events": batch}
                    batch = []
        if batch:
            yield {"events": batch}
        yield {"events": []}
        while not cancel.is_set():
            reply = self._do("xread", {self.stream: last}, count=BATCH, block=block_ms)
            for _, entries in reply or []:
                if entries:
                    last = entries[-1][0].decode()
                    yield self._response(self._decode(entries))

    def _response(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        response: dict[str, Any] = {"events": events}
        if any(event.get("name") == "resource-define" for event in events):
            r = self.r()
            if r is not None:
                response["R"] = r
        return response

    def compact(self, nodelist: str | None = None, attempts: int = 5) -> tuple[int, int]:
        """Rewrite the eventlog as its compaction; return (events before, after).

        Journal-only events are dropped with it. An event posted while the
        compaction is computed makes it start again (WATCH), so none is lost.
        """
        for _ in range(attempts):
            with self.client.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(self.stream)  # type: ignore[no-untyped-call]
                    before = self.events()
                    after = compact(before, nodelist)
                    pipe.multi()
                    pipe.delete(self.stream)
                    for event in after:
                        pipe.xadd(self.stream, {"event": json.dumps(event, separators=(",", ":"))})
                    pipe.execute()
                    return len(before), len(after)
                except redis.WatchError:
                    continue
                except redis.RedisError as exc:
                    raise store_errors(exc) from exc
        raise store_errors(redis.RedisError("the resource eventlog kept changing; try again"))

"""Each job's timeline: what happened to it, when, in the order it happened — for
``coral2-pipeline job show``.

``<prefix>:timeline:<jobid>`` is a Redis stream of entries ``at`` (epoch s), ``source``
(``flux``: a request or event from Flux; ``dws``: a state of its Workflow; ``task``: a
run of one of our tasks; ``sent``: a message to Flux) and ``what`` (one line, with no
secret in it). It keeps the newest :data:`MAX_ENTRIES` and expires ``retention`` after
its latest entry, as the job's record does — to within :data:`REFRESH_S`: a process
sets a timeline's expiry with its first entry, then again only once that long has
passed (an entry costs Redis one command, not two).

A timeline is a record for people: writing it never fails the work it describes (a
Redis error is logged and the entry dropped), and a run done twice may show twice.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import redis

from pipeline.store.connection import store_errors, translated
from pipeline.store.keys import Keys

log = logging.getLogger("coral2_pipeline.timeline")

#: The newest entries kept per job (a job retried for hours keeps its latest).
MAX_ENTRIES = 1000
SOURCES = ("flux", "dws", "task", "sent")
#: How long a process goes without setting again the expiry of a timeline it writes (s).
REFRESH_S = 3600.0
#: The timelines whose expiry a process remembers setting (the least recent forgotten).
REMEMBERED = 4096


@dataclass(frozen=True)
class Entry:
    """One thing that happened to a job."""

    at: float
    source: str
    what: str


@translated
class Timeline:
    """The timelines of every job."""

    def __init__(self, client: redis.Redis, keys: Keys, retention_s: float = 7 * 86400) -> None:
        self.client, self.keys = client, keys
        self.retention_s = retention_s
        #: entries dropped since the last one written (one warning an outage, not one each)
        self.dropped = 0
        #: jobid → when (monotonic s) this process last set its timeline's expiry
        self._expiry_set: OrderedDict[int, float] = OrderedDict()

    def _expiry_due(self, jobid: int, now: float) -> bool:
        """Whether this entry should set the timeline's expiry again (and note that it did)."""
        last = self._expiry_set.get(jobid)
        if last is not None and now - last < min(REFRESH_S, self.retention_s / 10):
            return False
        self._expiry_set[jobid] = now
        self._expiry_set.move_to_end(jobid)
        while len(self._expiry_set) > REMEMBERED:
            self._expiry_set.popitem(last=False)
        return True

    def note_in(self, pipe: Any, jobid: int, source: str, what: str) -> None:
        """Queue an entry for ``jobid``'s timeline in ``pipe`` (with a task's other closing
        writes: one round trip for them all)."""
        key = self.keys.timeline(jobid)
        fields = {"at": f"{time.time():.6f}", "source": source, "what": what}
        pipe.xadd(key, fields, maxlen=MAX_ENTRIES, approximate=True)
        if self._expiry_due(jobid, time.monotonic()):
            pipe.expire(key, int(self.retention_s))

    def note(self, jobid: int, source: str, what: str, at: float | None = None) -> None:
        """Add an entry to ``jobid``'s timeline (best effort, see the module docstring)."""
        key = self.keys.timeline(jobid)
        fields = {"at": f"{time.time() if at is None else at:.6f}", "source": source, "what": what}
        expire = self._expiry_due(jobid, time.monotonic())
        try:
            with self.client.pipeline(transaction=False) as pipe:
                pipe.xadd(key, fields, maxlen=MAX_ENTRIES, approximate=True)  # type: ignore[arg-type]
                if expire:
                    pipe.expire(key, int(self.retention_s))
                pipe.execute()
        except redis.RedisError as exc:
            self._expiry_set.pop(jobid, None)  # perhaps not set: next time
            self.dropped += 1
            if self.dropped == 1:
                why = store_errors(exc)
                log.warning(
                    "job %s: timeline entry %r dropped (and any more till Redis is back): %s",
                    jobid,
                    what,
                    why,
                )
            return
        if self.dropped:
            log.warning("timeline: written again; %d entries were dropped", self.dropped)
            self.dropped = 0

    def read(self, jobid: int) -> list[Entry]:
        """``jobid``'s timeline, oldest first (by when each thing happened)."""
        raw: Any = self.client.xrange(self.keys.timeline(jobid))
        entries = []
        for _id, fields in raw:
            text = {k.decode(): v.decode(errors="replace") for k, v in fields.items()}
            try:
                at = float(text.get("at", ""))
            except ValueError:
                continue
            entries.append(Entry(at, text.get("source", "?"), text.get("what", "")))
        return sorted(entries, key=lambda e: e.at)

"""The verdict that lets a held job start, or fails it: written by the pipeline, awaited by
``coral2-pipeline flux-prolog`` (the job-manager prolog Flux runs on rank 0 for each job).

:meth:`Releases.put` writes the verdict and pushes a wake-up on a per-job list
in one transaction; :meth:`Releases.wait` reads the verdict and, while there
is none, blocks on that list (``BLPOP``): Redis answers the moment it is
written, and nobody polls. A prolog that wakes pushes the wake-up back. With a per-rank
prolog (``pipeline.node_prologs``), the verdict and its wake-up list are written for
each node of the job too, under keys only that node's Redis user may read: no node can
read, take or spoil another job's verdict. Every key expires after ``ttl_s``; a prolog
that starts again (Flux restarted) finds the verdict still there.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

import redis

from pipeline.store.connection import refused_keys, translated
from pipeline.store.keys import Keys

#: How long a verdict is kept (s): longer than any prolog waits.
TTL_S = 7 * 24 * 3600
#: The longest single block on the wake-up list (s): under the client's socket timeout.
BLOCK_S = 2.0


@dataclass(frozen=True)
class Verdict:
    """``status`` 0: the job may start; otherwise ``note`` says why it may not."""

    status: int
    note: str = ""


@translated
class Releases:
    """Verdicts on held jobs (see the module docstring)."""

    def __init__(self, client: redis.Redis, keys: Keys, *, ttl_s: float = TTL_S) -> None:
        self.client = client
        self.keys = keys
        self.ttl_s = int(ttl_s)

    def put(self, jobid: int, status: int = 0, note: str = "", hosts: Sequence[str] = ()) -> None:
        """Write the job's verdict (the first one stands) and wake its waiting prolog; with
        ``hosts``, for each of them too, where that node's per-rank prolog waits."""
        value = json.dumps({"status": status, "note": note})
        places = [(self.keys.release(jobid), self.keys.release_wake(jobid))]
        places += [
            (self.keys.node_release(h, jobid), self.keys.node_release_wake(h, jobid)) for h in hosts
        ]
        pipe = self.client.pipeline(transaction=True)
        for verdict, wake in places:
            pipe.set(verdict, value, ex=self.ttl_s, nx=True)
            pipe.rpush(wake, "1")
            pipe.expire(wake, self.ttl_s)
        found = pipe.execute(raise_on_error=False)
        # a wake-up list a node made something else costs that node's wake-up alone: it
        # is made a list again, and every other verdict and wake-up stands
        wakes = [name for _, wake in places for name in (None, wake, None)]
        wrong = [w for w in refused_keys([w or "" for w in wakes], found) if w]
        if wrong:
            pipe = self.client.pipeline(transaction=True)
            pipe.delete(*wrong)
            for wake in wrong:
                pipe.rpush(wake, "1")
                pipe.expire(wake, self.ttl_s)
            pipe.execute()

    def get(self, jobid: int, host: str | None = None) -> Verdict | None:
        """The job's verdict (as node ``host`` reads it), or None while it is held."""
        key = self.keys.release(jobid) if host is None else self.keys.node_release(host, jobid)
        raw = self.client.get(key)
        if raw is None:
            return None
        data = json.loads(raw)
        return Verdict(int(data["status"]), str(data.get("note", "")))

    def wait(
        self, jobid: int, timeout_s: float | None = None, host: str | None = None
    ) -> Verdict | None:
        """Block until the job's verdict is written (None after ``timeout_s``; None waits
        for ever); with ``host``, the copy that node's per-rank prolog may read."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            verdict = self.get(jobid, host)
            if verdict is not None:
                return verdict
            block = BLOCK_S
            if deadline is not None:
                block = min(block, deadline - time.monotonic())
                if block <= 0:
                    return None
            wake = (
                self.keys.release_wake(jobid)
                if host is None
                else self.keys.node_release_wake(host, jobid)
            )
            if self.client.blpop([wake], timeout=max(block, 0.01)) is not None:
                # pass the wake-up on: with a per-rank prolog, one waits on each node
                self.client.rpush(wake, "1")

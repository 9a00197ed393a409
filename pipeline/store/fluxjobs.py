"""Which jobs Flux runs, as the bridge reads them from the job manager's events journal.

``<prefix>:flux-jobs`` maps a jobid to ``active`` or ``inactive <epoch s>``;
``<prefix>:flux-jobs-synced`` is when a bridge last read the journal's backlog
(its sentinel): a job it did not list then is not active. The stale sweep
reads both: a ``fluxjob-*`` Workflow whose job is inactive, or unknown to a
Flux whose backlog was read after the Workflow was made, holds rabbit capacity
for nobody.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import redis

from pipeline.store.connection import translated
from pipeline.store.keys import Keys

ACTIVE = "active"


@translated
class FluxJobs:
    """The bridge's view of Flux's jobs."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client = client
        self.key = keys.flux_jobs
        self.synced_key = keys.flux_jobs_synced

    def _run(self, build: Any) -> Any:
        pipe = self.client.pipeline(transaction=True)
        build(pipe)
        return pipe.execute()

    def active(self, jobid: int) -> None:
        """Flux has ``jobid`` (its ``submit``, or any event of a job not seen before)."""
        self._run(lambda p: p.hsetnx(self.key, str(jobid), ACTIVE))

    def inactive(self, jobid: int, now: float) -> None:
        """``jobid`` is INACTIVE (its ``clean``)."""
        self._run(lambda p: p.hset(self.key, str(jobid), f"inactive {now:.3f}"))

    def synced(self, active: Iterable[int], now: float) -> None:
        """The journal's backlog is read: ``active`` are every active job; the others are
        not (they ended while nobody read the journal)."""
        wanted = {str(j) for j in active}
        known: dict[bytes, bytes] = self.client.hgetall(self.key)  # type: ignore[assignment]
        gone = [k.decode() for k, v in known.items() if v == b"active" and k.decode() not in wanted]

        def build(pipe: Any) -> None:
            for jobid in gone:
                pipe.hset(self.key, jobid, f"inactive {now:.3f}")
            for jobid in wanted:
                pipe.hset(self.key, jobid, ACTIVE)
            pipe.set(self.synced_key, f"{now:.3f}")

        self._run(build)

    def view(self) -> tuple[dict[int, float | None], float | None]:
        """(jobid → None while active, else when it became inactive; when the backlog was
        last read, or None: no bridge has read it)."""
        pipe = self.client.pipeline(transaction=False)
        pipe.hgetall(self.key)
        pipe.get(self.synced_key)
        raw, synced = pipe.execute()
        jobs: dict[int, float | None] = {}
        for key, value in raw.items():
            text = value.decode()
            jobs[int(key)] = None if text == ACTIVE else float(text.split()[1])
        return jobs, None if synced is None else float(synced)

    def forget(self, jobids: Iterable[int]) -> None:
        """Drop inactive jobs nothing needs any more."""
        ids = [str(j) for j in jobids]
        if ids:
            self._run(lambda p: p.hdel(self.key, *ids))

"""Arming and disarming a job's deadlines (:mod:`pipeline.store.deadlines`): the set beat
sweeps, and the token the job's record holds for each kind (a member whose token the
record no longer holds fires stale, doing nothing)."""

from __future__ import annotations

import time

from pipeline.model.job import JobRecord
from pipeline.store import Deadline, Store


def arm(
    store: Store, jobid: int, kind: str, after_s: float, token: str | None = None
) -> JobRecord | None:
    """Arm (or re-arm) deadline ``kind`` of ``jobid`` to fall due ``after_s`` from now;
    the record holds the live token (default: the kind and the due time). The clock is
    read here, just before the write that checks it for a step (:mod:`pipeline.store.clock`).

    The member goes into the set first: a task killed before the record holds its
    token leaves a member that fires stale (nothing done), never a record whose
    deadline is not in the set. Re-arming with the same token (a re-run) moves the
    same member; with another, the old member is dropped once the record holds the
    new token."""
    now = time.time()
    due = now + after_s
    token = token or f"{kind}@{due:.3f}"
    store.deadlines.add(Deadline(jobid, kind, token, due), now=now)
    old: list[str] = []

    def change(record: JobRecord) -> JobRecord:
        old[:] = [t for t in [record.deadlines.get(kind)] if t is not None and t != token]
        return record.model_copy(update={"deadlines": {**record.deadlines, kind: token}})

    record = store.jobs.update(jobid, change)
    if record is None:
        store.deadlines.cancel(Deadline(jobid, kind, token, due))
    for stale in old:
        store.deadlines.cancel(Deadline(jobid, kind, stale, 0.0))
    return record


def disarm(store: Store, jobid: int, kind: str) -> None:
    """Disarm deadline ``kind`` of ``jobid``: drop every member of that kind from the set,
    whatever its token, then forget the record's token.

    A task killed between the two leaves nothing armed (the token left in the
    record is forgotten by the task's re-run, or replaced by the next arming);
    an arming killed before its record held the token is dropped too. A sweep
    that claimed a member just before the drop sends a ``timeouts.fire`` that
    waits for the job's lock, which the disarming task holds, and then finds the
    token forgotten: stale, it does nothing.
    """
    store.deadlines.cancel_kind(jobid, kind)
    record = store.jobs.get(jobid)  # afresh: a caller without the job's lock may be stale
    if record is None or kind not in record.deadlines:
        return

    def change(record: JobRecord) -> JobRecord | None:
        if kind not in record.deadlines:
            return None
        rest = {k: v for k, v in record.deadlines.items() if k != kind}
        return record.model_copy(update={"deadlines": rest})

    store.jobs.update(jobid, change)

"""Waiting for proof that the lock keeper renewed a lock, never for a stretch of time."""

from __future__ import annotations

import time

from pipeline.store import Store


def wait_renewed(store: Store, jobid: int, times: int = 2, timeout_s: float = 60.0) -> None:
    """Return once job ``jobid``'s lock has been renewed ``times`` times (its time to live
    went up), however long a loaded machine takes; fail if it expires first."""
    key = store.keys.lock(jobid)
    renewed, last = 0, store.client.pttl(key)
    deadline = time.monotonic() + timeout_s
    while renewed < times:
        assert time.monotonic() < deadline, f"job {jobid}'s lock was never renewed"
        now = store.client.pttl(key)
        assert now > 0, f"job {jobid}'s lock expired while held"
        renewed += now > last
        last = now
        time.sleep(0.005)

"""However many job locks a process takes, one lock-keeper thread renews them; none once idle.

A worker takes a job lock for every lifecycle task: a thread per lock taken
(or per ``store.locks`` access) would pile up by the tens of thousands, and
a keeper started afresh for every task would cost a thread start each time.
"""

from __future__ import annotations

import threading
import time

import pytest

from pipeline.store import Store
from tests.store.renewals import wait_renewed

_EARLIER: set[threading.Thread] = set()


@pytest.fixture(autouse=True)
def _ignore_earlier_keepers() -> None:
    """An earlier test's store keeps its own keeper a moment after its last lock."""
    _EARLIER.clear()
    _EARLIER.update(_all_keepers())


def _all_keepers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "lock-keeper"]


def _keepers() -> list[threading.Thread]:
    """The keepers this test started."""
    return [t for t in _all_keepers() if t not in _EARLIER]


def test_many_locks_taken_one_after_another_leave_at_most_one_keeper(store: Store) -> None:
    for jobid in range(200):
        with store.locks.held(jobid, ttl_s=0.3):
            pass
    assert len(_keepers()) <= 1


def test_locks_taken_one_after_another_are_renewed_by_the_same_keeper(store: Store) -> None:
    seen: list[threading.Thread] = []  # kept alive, so no two are the same object
    for jobid in range(50):
        with store.locks.held(jobid, ttl_s=30):
            seen += [t for t in _keepers() if t not in seen]
    assert len(seen) == 1


def test_locks_held_at_once_share_one_keeper(store: Store) -> None:
    with store.locks.held(1, ttl_s=0.3), store.locks.held(2, ttl_s=0.3):
        wait_renewed(store, 1)
        wait_renewed(store, 2)
        assert len(_keepers()) == 1
        assert store.locks.acquire(1, ttl_s=0.3) is None
        assert store.locks.acquire(2, ttl_s=0.3) is None


def test_the_keeper_ends_once_no_lock_is_held(store: Store) -> None:
    with store.locks.held(3, ttl_s=0.3):
        pass
    deadline = time.monotonic() + 5
    while _keepers() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _keepers() == []
    with store.locks.held(4, ttl_s=0.3):  # and a later lock is renewed again
        wait_renewed(store, 4)
        assert store.locks.acquire(4, ttl_s=0.3) is None

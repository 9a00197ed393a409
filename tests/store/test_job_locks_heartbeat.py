"""A held job lock is renewed while its block runs, and frees soon after a holder dies."""

from __future__ import annotations

import time

from pipeline.store import Store
from tests.store.renewals import wait_renewed


def test_a_lock_held_longer_than_its_ttl_stays_owned(store: Store) -> None:
    with store.locks.held(7, ttl_s=0.3):
        wait_renewed(store, 7, times=3)  # past its first time to live
        assert store.locks.acquire(7, ttl_s=0.3) is None
    assert store.locks.acquire(7, ttl_s=0.3) is not None


def test_the_lock_of_a_holder_that_stopped_renewing_frees_within_its_ttl(store: Store) -> None:
    assert store.locks.acquire(8, ttl_s=0.3) is not None  # then the holder "dies"
    assert store.locks.acquire(8, ttl_s=0.3) is None
    time.sleep(0.4)
    assert store.locks.acquire(8, ttl_s=0.3) is not None

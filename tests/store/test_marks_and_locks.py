"""One-shot marks fire once; job locks belong to their owner and expire."""

from __future__ import annotations

import threading
import time

import pytest

from pipeline.store import Store
from pipeline.store.marks import LockBusy


def test_a_mark_is_set_by_exactly_one_of_many_callers(store: Store) -> None:
    results: list[bool] = []
    threads = [
        threading.Thread(target=lambda: results.append(store.marks.once(1, "prolog-remove")))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(True) == 1
    assert store.marks.is_set(1, "prolog-remove")


def test_marks_are_per_job_and_per_name(store: Store) -> None:
    assert store.marks.once(1, "a")
    assert store.marks.once(2, "a")
    assert store.marks.once(1, "b")
    store.marks.clear(1, "a")
    assert store.marks.once(1, "a")


def test_a_held_lock_cannot_be_taken_or_released_by_another(store: Store) -> None:
    token = store.locks.acquire(7)
    assert token is not None
    assert store.locks.acquire(7) is None
    assert store.locks.release(7, "not-the-owner") is False
    assert store.locks.release(7, token) is True
    assert store.locks.acquire(7) is not None


def test_a_lock_expires_so_a_dead_owner_does_not_block_forever(store: Store) -> None:
    assert store.locks.acquire(8, ttl_s=0.05) is not None
    deadline = time.monotonic() + 5
    while store.locks.acquire(8) is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_an_expired_owner_cannot_extend_or_release_the_new_owners_lock(store: Store) -> None:
    old = store.locks.acquire(9, ttl_s=0.05)
    assert old is not None
    deadline = time.monotonic() + 5
    while (new := store.locks.acquire(9)) is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert store.locks.extend(9, old, ttl_s=10) is False
    assert store.locks.release(9, old) is False
    assert store.locks.release(9, new) is True


def test_held_serialises_blocks_for_the_same_job(store: Store) -> None:
    inside = 0
    overlaps = 0

    def work() -> None:
        nonlocal inside, overlaps
        with store.locks.held(11, wait_s=30):
            inside += 1
            overlaps += inside > 1
            time.sleep(0.005)
            inside -= 1

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == 0


def test_held_gives_up_with_a_temporary_error(store: Store) -> None:
    assert store.locks.acquire(12, ttl_s=30) is not None
    with pytest.raises(LockBusy, match="job 12 is locked"), store.locks.held(12, wait_s=0.05):
        pass

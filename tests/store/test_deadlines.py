"""Due deadlines are claimed atomically, once, earliest first."""

from __future__ import annotations

import threading

import pytest

from pipeline.errors import InputError
from pipeline.store import Deadline, Store


def test_only_due_deadlines_are_claimed_earliest_first(store: Store) -> None:
    store.deadlines.add(Deadline(1, "setup_timeout", "a", 105.0))
    store.deadlines.add(Deadline(2, "tc_timeout", "b", 101.0))
    store.deadlines.add(Deadline(3, "prerun_timeout", "c", 200.0))
    claimed = store.deadlines.claim_due(150.0)
    assert [(d.jobid, d.kind, d.token, d.due) for d in claimed] == [
        (2, "tc_timeout", "b", 101.0),
        (1, "setup_timeout", "a", 105.0),
    ]
    assert store.deadlines.claim_due(150.0) == []
    assert [d.jobid for d in store.deadlines.pending()] == [3]


def test_a_cancelled_deadline_never_fires(store: Store) -> None:
    deadline = Deadline(4, "postrun_timeout", "t", 10.0)
    store.deadlines.add(deadline)
    assert store.deadlines.cancel(deadline) is True
    assert store.deadlines.cancel(deadline) is False
    assert store.deadlines.claim_due(100.0) == []


def test_concurrent_sweepers_claim_each_deadline_exactly_once(store: Store) -> None:
    for i in range(300):
        store.deadlines.add(Deadline(i, "tc_timeout", "x", float(i)))
    claimed: list[int] = []
    lock = threading.Lock()

    def sweep() -> None:
        while batch := store.deadlines.claim_due(1000.0, limit=7):
            with lock:
                claimed.extend(d.jobid for d in batch)

    threads = [threading.Thread(target=sweep) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claimed) == list(range(300))


def test_kinds_cannot_contain_the_separator(store: Store) -> None:
    with pytest.raises(InputError, match="must not contain ':'"):
        store.deadlines.add(Deadline(1, "a:b", "t", 1.0))

"""The simulated controllers' work queue: a burst is one item, a name is never held twice."""

from __future__ import annotations

import threading
import time

from coral2_sim.dws.workqueue import WorkQueue


def test_a_name_added_many_times_while_waiting_is_handed_out_once() -> None:
    queue = WorkQueue()
    for _ in range(5):
        queue.add("a")
    queue.add("b")
    assert [queue.get(), queue.get()] == ["a", "b"]
    assert len(queue) == 0


def test_a_name_added_while_held_waits_for_done_then_comes_back() -> None:
    queue = WorkQueue()
    queue.add("a")
    assert queue.get() == "a"
    queue.add("a")
    queue.add("b")
    assert queue.get() == "b"  # "a" is held, so it is not handed to a second worker
    queue.done("a")
    assert queue.get() == "a"


def test_add_after_hands_the_name_out_no_earlier_than_asked() -> None:
    queue = WorkQueue()
    start = time.monotonic()
    queue.add_after("late", 0.05)
    queue.add_after("now", 0)
    assert queue.get() == "now"
    assert queue.get() == "late"
    assert time.monotonic() - start >= 0.05


def test_close_wakes_every_waiting_worker() -> None:
    queue = WorkQueue()
    got: list[str | None] = []
    threads = [threading.Thread(target=lambda: got.append(queue.get())) for _ in range(3)]
    for thread in threads:
        thread.start()
    queue.close()
    for thread in threads:
        thread.join(timeout=5)
    assert got == [None, None, None]


def test_concurrent_workers_never_hold_one_name_at_the_same_time() -> None:
    queue = WorkQueue()
    held: set[str] = set()
    overlaps: list[str] = []
    handled: list[str] = []
    guard = threading.Lock()

    def work() -> None:
        while (name := queue.get()) is not None:
            with guard:
                if name in held:
                    overlaps.append(name)
                held.add(name)
            time.sleep(0.001)
            with guard:
                held.discard(name)
                handled.append(name)
            queue.done(name)

    workers = [threading.Thread(target=work) for _ in range(4)]
    for worker in workers:
        worker.start()
    for i in range(400):
        queue.add(f"wf{i % 5}")
        if i % 50 == 0:
            time.sleep(0.002)
    deadline = time.monotonic() + 10
    while len(queue) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    queue.close()
    for worker in workers:
        worker.join(timeout=5)
    assert overlaps == []
    assert set(handled) == {f"wf{i}" for i in range(5)}

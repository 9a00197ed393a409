"""A simulator process (the simulated API server, the benchmark's simulated Flux) freezes
its heap as it goes, so that CPython's full collections — a pause no real API server or
Flux has — walk only its newest objects; its garbage is collected first, not frozen."""

from __future__ import annotations

import gc
import time
import weakref

from coral2_sim.heap import FrozenHeap

from tests.heap_probe import Node, unfrozen, walked_by_a_full_collection

__all__ = ["unfrozen"]  # the fixture


def test_objects_it_keeps_leave_full_collections_and_its_garbage_is_freed(
    unfrozen: None,
) -> None:
    kept = [{"workflow": [i]} for i in range(1000)]
    garbage = Node()
    gone = weakref.ref(garbage)
    del garbage

    with FrozenHeap(every_s=0.01):
        deadline = time.monotonic() + 60
        while not gc.get_freeze_count() and time.monotonic() < deadline:
            time.sleep(0.01)  # (a list of every object, read meanwhile, would hold the garbage)

    assert walked_by_a_full_collection(kept) == 0
    assert gone() is None

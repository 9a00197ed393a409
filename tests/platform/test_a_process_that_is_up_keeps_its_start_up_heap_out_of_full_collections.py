"""A worker consuming, a prefork child started, or beat scheduling has collected what its
start-up left and frozen the rest: later full collections walk only what came after."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from celery.signals import beat_init, worker_process_init, worker_ready

import pipeline.platform.supervision  # noqa: F401  (connects the handlers, as the app does)


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Nothing frozen yet, and no automatic collection: only the process's own moves."""
    gc.unfreeze()
    gc.disable()
    yield
    gc.enable()
    gc.unfreeze()  # the rest of the session's objects go back to the collector


def walked_by_a_full_collection(objects: list[Any]) -> int:
    ids = {id(o) for o in objects}
    return sum(1 for o in gc.get_objects() if id(o) in ids)


@pytest.mark.parametrize("ready", [worker_ready, worker_process_init, beat_init])
def test_what_the_process_holds_when_up_is_left_out_of_full_collections(
    unfrozen: None, ready: Any
) -> None:
    held = [{"start-up": [i]} for i in range(1000)]
    assert walked_by_a_full_collection(held) == len(held)

    ready.send(sender=None)

    assert walked_by_a_full_collection(held) == 0
    assert gc.get_freeze_count() >= len(held)


def test_what_start_up_left_behind_is_collected_not_frozen(unfrozen: None) -> None:
    garbage = Node()
    gone = weakref.ref(garbage)
    del garbage

    worker_ready.send(sender=None)

    assert gone() is None

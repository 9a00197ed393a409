"""A worker consuming, a prefork child started, or beat scheduling has collected what its
start-up left and frozen the rest: later full collections walk only what came after."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from celery.signals import beat_init, worker_process_init, worker_ready

import pipeline.platform.supervision  # noqa: F401  (connects the handlers, as the app does)
from tests.heap_probe import Node, unfrozen, walked_by_a_full_collection

__all__ = ["unfrozen"]  # the fixture


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

"""What the heap tests share: a reference cycle, a heap with nothing frozen and no automatic
collection, and whether a full collection would walk given objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Nothing frozen yet, and no automatic collection: only the code under test moves."""
    gc.unfreeze()
    gc.disable()
    yield
    gc.enable()
    gc.unfreeze()  # the rest of the session's objects go back to the collector


def walked_by_a_full_collection(objects: list[Any]) -> int:
    """How many of ``objects`` a full collection would walk (the frozen ones it skips)."""
    ids = {id(o) for o in objects}
    return sum(1 for o in gc.get_objects() if id(o) in ids)

"""A VNI pool of its own for each test, on the session's redis-server."""

from __future__ import annotations

import pytest

from pipeline.store import Store
from pipeline.store.vnipool import VniPool


@pytest.fixture
def pool(store: Store) -> VniPool:
    """An unconfigured pool under the test's own key prefix."""
    return VniPool(store.client, store.keys)

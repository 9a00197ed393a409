"""Redis failures reach callers as named pipeline errors, and bad URLs say how to fix them."""

from __future__ import annotations

import pytest

from pipeline.errors import ConfigError, StoreUnavailable
from pipeline.store import Store
from pipeline.store.connection import connect
from tests.redis_server import free_port


def test_an_unreachable_redis_is_store_unavailable() -> None:
    store = Store.from_url(f"redis://127.0.0.1:{free_port()}/0", "x")
    with pytest.raises(StoreUnavailable, match="Redis unavailable"):
        store.jobs.get(1)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://localhost:6379", "invalid Redis URL"),
        ("sentinel://host:port/mymaster", "invalid sentinel address 'host:port'"),
        ("sentinel://h1:26379", "names no service"),
        ("sentinel://h1:26379/m?db=x", "db must be a number"),
    ],
)
def test_bad_urls_are_config_errors(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        connect(url)

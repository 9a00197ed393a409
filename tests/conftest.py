"""Shared fixtures: the session's redis-server, Celery worker and API servers, test data, R."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kombu.serialization import registry

from pipeline.model.hostlist import expand_hostlist
from pipeline.model.idset import encode_idset
from tests.celery_fixtures import celery_app, kube, kube_api, worker
from tests.kube_fixtures import api_client, custom, dws, kube_server, server, simulated, transport
from tests.redis_server import redis_url, store

__all__ = [
    "api_client",
    "celery_app",
    "custom",
    "dws",
    "kube",
    "kube_api",
    "kube_server",
    "make_r",
    "redis_url",
    "server",
    "simulated",
    "store",
    "transport",
    "worker",
]

#: the real-Flux tier runs only where a Flux is installed (tests/flux_tier.py)
pytest_plugins = ["tests.flux_tier", "tests.dws_tier", "tests.bad_input_report"]

DATA = Path(__file__).parent / "data"


#: kombu's serializer registry as the session found it, before any app signed messages
_PRISTINE = (
    registry._default_content_type,
    registry._default_content_encoding,
    registry._default_encode,
    frozenset(registry._disabled_content_types),
)


@pytest.fixture(autouse=True)
def kombu_serializers() -> Iterator[None]:
    """Celery's message signing is set up process-wide (kombu's default serializer becomes
    ``auth`` and every other content type but JSON is disabled). A test that signs in this
    process, or a module fixture that does, must not leave that to the tests after it: the
    registry goes back to what the session found after every test (signed apps name their
    serializer and accepted content themselves)."""
    yield
    (
        registry._default_content_type,
        registry._default_content_encoding,
        registry._default_encode,
        disabled,
    ) = _PRISTINE
    registry._disabled_content_types.clear()
    registry._disabled_content_types.update(disabled)


@pytest.fixture
def data_dir() -> Path:
    return DATA


def make_r(
    hosts: str, cores: str = "0", properties: dict[str, str] | None = None
) -> dict[str, Any]:
    """Return R like ``flux R encode -H<hosts> -c<cores>``."""
    count = len(expand_hostlist(hosts))
    execution: dict[str, Any] = {
        "R_lite": [{"rank": encode_idset(range(count)), "children": {"core": cores}}],
        "starttime": 0.0,
        "expiration": 0.0,
        "nodelist": [hosts],
    }
    if properties:
        execution["properties"] = properties
    return {"version": 1, "execution": execution}

"""A message we send names its arguments the way Flower and ``celery inspect`` show them.

``dispatch`` passes ``argsrepr``/``kwargsrepr`` itself (built-in ``repr``)
instead of leaving them to Celery's slower ``saferepr``: a monitor must
still read every argument of a small message, and a cut one of a large
message, no longer than Celery's own limit. Read from the real broker's
queue, as a monitor's worker would receive it.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from pipeline.platform.app import create_app
from pipeline.platform.sending import dispatch
from pipeline.settings import load_settings
from pipeline.store import Store


def _sent_headers(redis_url: str, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    env = {
        "CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_url,
        "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "reprs",
        "CORAL2_PIPELINE_PIPELINE__QUEUES__LIFECYCLE": "reprs-lifecycle",
    }
    app = create_app(load_settings(env=env), set_current=False)
    client = redis.Redis.from_url(redis_url)
    try:
        dispatch(app, Store.from_url(redis_url, "reprs"), name, kwargs)
        raw = client.rpop("reprs-lifecycle")
    finally:
        client.delete("reprs-lifecycle", "reprs:ledger", "reprs:ledger-due")
    assert raw is not None
    headers: dict[str, Any] = json.loads(raw)["headers"]
    return headers


def test_a_small_message_shows_every_argument(redis_url: str) -> None:
    headers = _sent_headers(redis_url, "dws.observe", {"jobid": 42})
    assert headers["argsrepr"] == "()"
    assert headers["kwargsrepr"] == "{'jobid': 42}"


def test_a_large_message_shows_its_start_within_celerys_limit(redis_url: str) -> None:
    kwargs = {
        "jobid": 7,
        "userid": 1000,
        "directives": ["#DW jobdw type=xfs capacity=1GiB name=a"] * 100,
        "resources": [],
        "failure_tolerance": 0,
    }
    shown = _sent_headers(redis_url, "dws.create", kwargs)["kwargsrepr"]
    assert len(shown) == 1024
    assert shown.startswith("{'jobid': 7, 'userid': 1000, 'directives': ['#DW jobdw type=xfs")
    assert shown.endswith("...")

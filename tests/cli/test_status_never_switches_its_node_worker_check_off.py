"""``status`` never switches its node-worker check off by itself: with settings that give
the node workers work but name no rabbit mapping, it says UNKNOWN and why; with a minimal
monitoring config (no node work, no mapping) it checks the computes the lifecycle workers
noted in the store; and how bad silent node workers are scales with how many are: a
few is a WARNING, a tenth of them or more is CRITICAL."""

from __future__ import annotations

import uuid

import pytest

from pipeline.cli.status_flags import CRITICAL, WARNING, silent_severity
from pipeline.store import Store
from tests.cli.status_helpers import Status, as_json


@pytest.fixture
def prefix(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"nw-{uuid.uuid4().hex[:6]}"
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__BROKER_URL", redis_url)
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__KEY_PREFIX", name)
    monkeypatch.delenv("CORAL2_PIPELINE_PIPELINE__REDIS_URL", raising=False)
    monkeypatch.delenv("CORAL2_PIPELINE_RABBIT__MAPPING", raising=False)
    monkeypatch.delenv("CORAL2_PIPELINE_CONFIG", raising=False)
    return name


def test_node_work_without_a_mapping_is_unknown_saying_why(
    prefix: str, status: Status, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CORAL2_PIPELINE_CRAY_SLINGSHOT__CXI_ENABLE", "true")
    _, answer = as_json(status)
    unknown = [f for f in answer["flags"] if f.startswith("cannot check the node workers")]
    assert unknown == [
        "cannot check the node workers: rabbit.mapping is not set, so the computes that "
        "run one are unknown"
    ]


def test_a_minimal_monitoring_config_checks_what_the_workers_noted(
    prefix: str, status: Status, redis_url: str
) -> None:
    store = Store.from_url(redis_url, prefix)
    store.expected_node_workers.publish(["c1", "c2"])  # as a lifecycle worker does at start
    code, answer = as_json(status)
    [flag] = [f for f in answer["flags"] if "node workers are not running" in f]
    assert flag.startswith("2 of 2 node workers are not running (no heartbeat from c[1-2])")
    assert code == CRITICAL and answer["status"] == "CRITICAL"
    store.expected_node_workers.publish(None)  # node work turned off: nothing to check
    _, answer = as_json(status)
    assert not [f for f in answer["flags"] if "node workers" in f]
    store.client.close()


def test_how_bad_silent_node_workers_are_scales_with_how_many() -> None:
    assert silent_severity(1, 11_136) == WARNING
    assert silent_severity(1_113, 11_136) == WARNING
    assert silent_severity(1_114, 11_136) == CRITICAL
    assert silent_severity(11_136, 11_136) == CRITICAL
    assert silent_severity(1, 2) == CRITICAL  # a small system: each one is a tenth

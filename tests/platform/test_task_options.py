"""Task options are checked when a task is declared (by mypy, against the typed signature,
and at run time); node queues come from one helper."""

from __future__ import annotations

import pytest

from pipeline.platform.config import celery_config
from pipeline.platform.task import QueueRouter, node_queue, pipeline_task
from pipeline.settings import load_settings


def test_an_unknown_option_fails_at_declaration_naming_it() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'retries'"):
        pipeline_task("x.y", queue="lifecycle", retries=3)  # type: ignore[call-arg]


def test_a_bad_queue_fails_at_declaration() -> None:
    with pytest.raises(ValueError, match="queue 'lifecycel' is not one of"):
        pipeline_task("x.y", queue="lifecycel")  # type: ignore[arg-type]


def test_node_queues_are_named_after_the_host() -> None:
    assert node_queue("compute01") == "node.compute01"
    with pytest.raises(ValueError, match="invalid hostname"):
        node_queue("bad host")


def test_tasks_route_to_the_queue_names_the_settings_give() -> None:
    router = QueueRouter({"lifecycle": "lc", "timeouts": "to", "housekeeping": "hk"})

    class Fake:
        logical_queue = "timeouts"

    assert router("t", (), {}, {}, Fake()) == {"queue": "to"}
    Fake.logical_queue = "node"
    assert router("t", (), {}, {}, Fake()) is None


def test_the_celery_config_is_safe_for_at_least_once_delivery() -> None:
    conf = celery_config(load_settings(env={}))
    assert conf["task_acks_late"] is True
    assert conf["task_reject_on_worker_lost"] is True
    assert conf["worker_prefetch_multiplier"] == 2  # milliseconds-long tasks
    assert conf["accept_content"] == ["json"]
    # one redelivery, the ledger's: no unacked hash for kombu to restore from
    assert conf["broker_transport_options"]["ack_emulation"] is False
    assert conf["worker_send_task_events"] is False  # until a monitor enables them

"""A message no worker can use — not JSON, not kombu's envelope, no task id, a task no one
runs, a body that is not a task's — is set aside as a dead letter with its raw bytes, and
the worker (lifecycle or node) goes on running the next message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from celery import Celery

from pipeline.model.deadletter import DeadLetter, count_key, list_key
from pipeline.platform.app import create_app
from pipeline.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]


def envelope(headers: object, body: str = "[[], {}, {}]") -> bytes:
    """A kombu message as the Redis transport stores it."""
    properties = {
        "delivery_info": {"exchange": "lifecycle", "routing_key": "lifecycle"},
        "delivery_tag": str(uuid.uuid4()),
        "body_encoding": "utf-8",
        "priority": 0,
    }
    message = {
        "body": body,
        "content-type": "application/json",
        "content-encoding": "utf-8",
        "headers": headers,
        "properties": properties,
    }
    return json.dumps(message).encode()


BAD = [
    b"\xff",  # one byte, not UTF-8
    b"not json at all",
    b"1",  # JSON, not an object
    b'{"body": "x"}',  # an object, not an envelope
    envelope({"task": "job.run"}),  # a task name and no id
    envelope({"task": "no.such.task", "id": "x1"}),
    envelope({"id": "x2"}),  # no task name
    envelope({"task": "housekeeping.ping", "id": "x3"}, body="{{{"),  # body not JSON
]


@pytest.fixture(scope="module")
def prefix() -> str:
    return f"dl-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def env(redis_url: str, prefix: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")}
    env["CORAL2_PIPELINE_PIPELINE__BROKER_URL"] = redis_url
    env["CORAL2_PIPELINE_PIPELINE__KEY_PREFIX"] = prefix
    # queues of its own: the session's test worker serves the default names
    env["CORAL2_PIPELINE_PIPELINE__QUEUES__LIFECYCLE"] = f"{prefix}-lifecycle"
    env["CORAL2_PIPELINE_PIPELINE__QUEUES__HOUSEKEEPING"] = f"{prefix}-housekeeping"
    return env


@pytest.fixture(scope="module")
def app(env: dict[str, str]) -> Celery:
    return create_app(load_settings(env=env), set_current=False)


def spawn(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)


@pytest.fixture(scope="module")
def workers(
    env: dict[str, str], app: Celery, prefix: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    logs = tmp_path_factory.mktemp("workers")
    celery = [sys.executable, "-m", "celery", "-A", "pipeline.app", "worker", "--pool=threads"]
    celery += ["-Q", f"{prefix}-lifecycle,{prefix}-housekeeping", "--concurrency=2"]
    node = [sys.executable, "-m", "pipeline.cli", "node-worker", "--hostname", "n1"]
    node += ["--backend", "systemd", "--nic", "simulated", "--state-dir", str(logs / "state")]
    procs = [spawn(celery, env, logs / "worker.log"), spawn(node, env, logs / "node.log")]
    try:
        up = app.send_task("housekeeping.ping", args=["up"], queue=f"{prefix}-housekeeping")
        up.get(timeout=120)
        app.send_task("node.ping", args=["n1"], queue="node.n1").get(timeout=120)
        yield logs
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)


def letters(client: redis.Redis, prefix: str, count: int) -> list[DeadLetter]:
    deadline = time.monotonic() + 30
    while client.llen(list_key(prefix)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return [DeadLetter.model_validate_json(raw) for raw in client.lrange(list_key(prefix), 0, -1)]


@pytest.mark.parametrize("queue", ["lifecycle", "node.n1"])
def test_bad_messages_are_set_aside_and_the_next_task_runs(
    workers: Path, app: Celery, redis_url: str, prefix: str, queue: str
) -> None:
    client = redis.Redis.from_url(redis_url)
    client.delete(list_key(prefix), count_key(prefix))
    target = f"{prefix}-lifecycle" if queue == "lifecycle" else queue
    for raw in BAD:
        client.lpush(target, raw)
    found = letters(client, prefix, len(BAD))
    assert len(found) == len(BAD), [f.reason for f in found]
    # a node worker's dead letters reach the list through its own answers stream, named
    # after the node
    places = {target, "lifecycle"} if queue == "lifecycle" else {f"n1:{target}", "n1:lifecycle"}
    assert {f.where for f in found} <= places
    assert int(client.get(count_key(prefix)) or 0) == len(BAD)
    [one_byte] = [f for f in found if f.raw == "\\xff"]
    assert one_byte.size == 1 and "not a kombu message" in one_byte.reason
    assert any("no.such.task" in f.reason for f in found)
    if queue == "lifecycle":
        answer = app.send_task(
            "housekeeping.ping", args=["still here"], queue=f"{prefix}-housekeeping"
        )
        assert answer.get(timeout=60) == "still here"
    else:
        assert app.send_task("node.ping", args=["n1"], queue=queue).get(timeout=60) == "n1"

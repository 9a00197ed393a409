"""The management user (Celery workers, beat, the command line, the hooks) reaches the
pipeline's keys — the job store, its queues (nodes' included), kombu's bookkeeping, the
tasks' results — and Celery's channels, and no key or channel of another application
sharing the Redis server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from coral2_sim.redis_server import RedisServer

from pipeline.platform.acl import acl_file
from pipeline.settings import load_settings

SETTINGS = load_settings(
    env={
        "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "coral2",
        "CORAL2_PIPELINE_PIPELINE__BROKER_URL": "redis://127.0.0.1:6379/3",
    }
)


@pytest.fixture(scope="module")
def management(tmp_path_factory: pytest.TempPathFactory) -> Iterator[redis.Redis]:
    work: Path = tmp_path_factory.mktemp("management")
    aclfile = work / "users.acl"
    aclfile.write_text(acl_file(SETTINGS, {"management": "management-pw"}))
    with RedisServer(work, aclfile=aclfile, login=("management", "management-pw")) as server:
        client = redis.Redis(port=server.port, username="management", password="management-pw")
        yield client
        client.close()


@pytest.mark.parametrize(
    "key",
    [
        "coral2:job:1",
        "lifecycle",
        "lifecycle\x06\x163",
        "timeouts",
        "housekeeping",
        "node.compute01",
        "_kombu.binding.lifecycle",
        "celery-task-meta-0f1e",
        "5c0ffee.reply.celery.pidbox",
        "demo1@vm.celery.pidbox",
        "demo1@vm.celery.pidbox\x06\x163",
        "celeryev.1f2e",
    ],
)
def test_it_writes_and_reads_the_pipelines_keys(management: redis.Redis, key: str) -> None:
    management.rpush(key, "x")
    assert management.lpop(key) == b"x"


# kombu's unacked hash of another application's Celery: the pipeline keeps none
@pytest.mark.parametrize(
    "key", ["other-app:session:1", "celery", "jobs", "coral2-other:x", "unacked", "unacked_index"]
)
def test_it_reaches_no_other_applications_key(management: redis.Redis, key: str) -> None:
    with pytest.raises(redis.exceptions.NoPermissionError):
        management.get(key)
    with pytest.raises(redis.exceptions.NoPermissionError):
        management.set(key, "x")


def test_it_publishes_on_celerys_channels_alone(management: redis.Redis) -> None:
    # the database of the broker URL names kombu's fanout channels
    for channel in ("/3.celeryev/worker.heartbeat", "/3.celery.pidbox", "celery-task-meta-0f1e"):
        management.publish(channel, "x")
    for channel in ("/0.celery.pidbox", "other-app-events"):
        with pytest.raises(redis.exceptions.NoPermissionError):
            management.publish(channel, "x")


def test_it_subscribes_to_remote_control_and_events_as_kombu_does(
    management: redis.Redis,
) -> None:
    pubsub = management.pubsub()
    patterns = ("/3.celery.pidbox", "/3.celeryev/*", "/3.celeryev/worker.*")
    pubsub.psubscribe(*patterns)
    pubsub.subscribe("celery-task-meta-0f1e")
    # Redis refuses a subscription in its confirmation, which the client raises on reading
    confirmed = [pubsub.get_message(timeout=5) for _ in range(4)]
    assert [(m or {}).get("type") for m in confirmed] == ["psubscribe"] * 3 + ["subscribe"]
    pubsub.close()

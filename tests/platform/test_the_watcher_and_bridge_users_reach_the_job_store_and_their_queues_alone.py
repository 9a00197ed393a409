"""The watcher's and the bridge's Redis users reach what their work needs — the job store,
the lifecycle and housekeeping queues they send to, kombu's binding tables a send
declares — and nothing else of Celery's: not the timeouts queue, a node's queue, another
application's kombu bookkeeping, a task's result, or a channel."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from coral2_sim.redis_server import RedisServer

from pipeline.errors import FluxError
from pipeline.platform.acl import acl_file
from pipeline.platform.app import create_app, sender
from pipeline.services.bridge.delivery import Deliverer
from pipeline.services.hooks import Hooks
from pipeline.settings import load_settings
from pipeline.store import Store
from pipeline.store.outbox import OutboxMessage

ROLES = ("management", "watcher", "bridge")


class RefusingFlux:
    def rpc(self, topic: str, payload: dict[str, Any], nodeid: int = 0) -> dict[str, Any]:
        raise FluxError("job not found in depend state")

    def kvs_put(self, jobid: int, key: str, value: Any) -> None:
        raise FluxError("no such job")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    work = tmp_path_factory.mktemp("roles")
    settings = load_settings(env={"CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "coral2"})
    aclfile = work / "users.acl"
    aclfile.write_text(acl_file(settings, {role: f"{role}-pw" for role in ROLES}))
    with RedisServer(work, aclfile=aclfile, login=("management", "management-pw")) as redis_server:
        yield redis_server


def settings_as(role: str, server: RedisServer, tmp: Path) -> Any:
    password = tmp / f"{role}.pass"
    password.write_text(f"{role}-pw\n")
    password.chmod(0o600)
    return load_settings(
        env={
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": server.url,
            "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "coral2",
            "CORAL2_PIPELINE_PIPELINE__REDIS_USERNAME": role,
            "CORAL2_PIPELINE_PIPELINE__REDIS_PASSWORD_FILE": str(password),
        }
    )


@pytest.mark.parametrize("role", ["watcher", "bridge"])
def test_it_writes_the_store_and_sends_its_tasks(
    role: str, server: RedisServer, tmp_path: Path
) -> None:
    settings = settings_as(role, server, tmp_path)
    app = create_app(settings, set_current=False, tasks=False)
    hooks = Hooks(settings, sender(app), owner_uid=0)
    assert hooks.dispatch("dws.teardown", {"jobid": 5}) == {"success": True}
    store = Store.from_url(settings.store_url, "coral2")
    store.watch.mark_pending(5)
    store.outbox.append(OutboxMessage("epilog-remove", 5, {"id": 5}))
    refusing = Deliverer(store.outbox, RefusingFlux(), f"flux-bridge-{role}", lambda h: h)
    assert refusing.run_once() == 1  # delivered, refused: noted in the timeline, counted
    assert store.metrics.refusals_total()["epilog-remove"] >= 1
    store.close()


@pytest.mark.parametrize("role", ["watcher", "bridge"])
def test_it_reaches_nothing_else_of_celerys(role: str, server: RedisServer) -> None:
    client = redis.Redis(port=server.port, username=role, password=f"{role}-pw")
    for call in (
        lambda: client.llen("timeouts"),
        lambda: client.llen("node.compute01"),
        lambda: client.hgetall("unacked"),
        lambda: client.get("celery-task-meta-x"),
        lambda: client.publish("/0.celery.pidbox", "x"),
    ):
        with pytest.raises(redis.exceptions.NoPermissionError):
            call()
    client.close()

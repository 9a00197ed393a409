"""The watcher and the bridge are two Redis users, each reaching what its own work needs
and nothing more: both send tasks (the ledger, the timeline, the lifecycle and
housekeeping queues and their kombu bindings); the watcher keeps its watch's keys, the
bridge delivers the outbox and counts Flux's refusals. Neither may change a job record, a
lock or the other's keys, run EVAL, or reach anything else of Celery's (the timeouts or a
node queue, a result, a channel). What each is granted is read back with ``ACL GETUSER``
and is the list docs/security.md gives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from coral2_sim.redis_server import RedisServer

from pipeline.errors import FluxError, StoreUnavailable
from pipeline.platform.acl import acl_file, bridge_keys, watcher_keys
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
    passwords = {role: f"{role}-pw" for role in ROLES}
    aclfile.write_text(acl_file(settings, passwords, admin="admin-pw"))
    with RedisServer(work, aclfile=aclfile, login=("management", "management-pw")) as redis_server:
        yield redis_server


def keys_granted(server: RedisServer, role: str) -> list[str]:
    """The key patterns Redis holds for ``role`` (``ACL GETUSER``), sorted."""
    with redis.Redis(port=server.port, username="admin", password="admin-pw") as admin:
        found: Any = admin.acl_getuser(role)
    keys = found["keys"]
    words = keys.split() if isinstance(keys, str) else [str(k) for k in keys]
    return sorted(words)


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
def test_each_sends_its_tasks(role: str, server: RedisServer, tmp_path: Path) -> None:
    settings = settings_as(role, server, tmp_path)
    app = create_app(settings, set_current=False, tasks=False)
    hooks = Hooks(settings, sender(app), owner_uid=0)
    assert hooks.dispatch("dws.teardown", {"jobid": 5}) == {"success": True}


def test_the_watcher_keeps_its_watch_and_nothing_of_the_bridges(
    server: RedisServer, tmp_path: Path
) -> None:
    store = Store.from_url(settings_as("watcher", server, tmp_path).store_url, "coral2")
    store.watch.mark_pending(5)
    store.watch.save(store.watch.checkpoint("workflows", "1234"))
    assert store.watch.resume_from("workflows") == "1234"
    with pytest.raises(StoreUnavailable, match=r"NOPERM|permission"):
        store.outbox.append(OutboxMessage("epilog-remove", 5, {"id": 5}))
    store.close()


def test_the_bridge_delivers_the_outbox_and_counts_refusals(
    server: RedisServer, tmp_path: Path
) -> None:
    management = Store.from_url(settings_as("management", server, tmp_path).store_url, "coral2")
    management.outbox.append(OutboxMessage("epilog-remove", 5, {"id": 5}))  # as a worker
    store = Store.from_url(settings_as("bridge", server, tmp_path).store_url, "coral2")
    refusing = Deliverer(store.outbox, RefusingFlux(), "flux-bridge", lambda h: h)
    assert refusing.run_once() == 1  # delivered, refused: noted in the timeline, counted
    assert store.metrics.refusals_total()["epilog-remove"] >= 1
    with pytest.raises(StoreUnavailable, match=r"NOPERM|permission"):
        store.watch.mark_pending(5)
    management.close()
    store.close()


@pytest.mark.parametrize("role", ["watcher", "bridge"])
def test_neither_may_change_a_job_record_a_lock_or_run_eval(role: str, server: RedisServer) -> None:
    client = redis.Redis(port=server.port, username=role, password=f"{role}-pw")
    for call in (
        lambda: client.set("coral2:job:5", "{}"),
        lambda: client.delete("coral2:job:5"),
        lambda: client.set("coral2:lock:5", "x"),
        lambda: client.sadd("coral2:jobs", "5"),
        lambda: client.eval("return 1", 0),
        lambda: client.keys("*"),
    ):
        with pytest.raises(redis.exceptions.NoPermissionError):
            call()
    client.close()


@pytest.mark.parametrize("role", ["watcher", "bridge"])
def test_what_each_is_granted_is_what_the_docs_list(role: str, server: RedisServer) -> None:
    settings = load_settings(env={"CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "coral2"})
    granted = keys_granted(server, role)
    listed = watcher_keys(settings) if role == "watcher" else bridge_keys(settings)
    assert granted == sorted(listed)
    documented = (Path(__file__).parents[2] / "docs" / "security.md").read_text()
    for pattern in listed:
        name = pattern.lstrip("%RW~").replace("coral2:", "<prefix>:")
        assert f"`{name}`" in documented, f"docs/security.md does not list {name} for {role}"


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

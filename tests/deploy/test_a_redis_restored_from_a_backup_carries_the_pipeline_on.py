"""Redis holds the only copy of the jobs in flight; docs/operations.md says how to back
it up while it serves (BGSAVE, copy the snapshot) and restore it into a Redis with an
append-only file, as production runs it (start without the file, turn it on, which
writes it from the snapshot, restart). Done here on a real redis-server: a job whose
nodes were let start is backed up, Redis is lost, the backup restored, and the job's
cleanup then runs to the end with nothing left."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from coral2_sim.kube.api import KubeApiServer
from coral2_sim.redis_server import RedisServer

from pipeline.clients.k8s import DwsClient
from tests.conftest import make_r
from tests.tasks.eager_app import eager_app, store_of_app
from tests.tasks.kill_points import Run, drive

JOBID = 777
ENV = {
    "CORAL2_PIPELINE_CRAY_SLINGSHOT__CXI_ENABLE": "true",
    "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "restored",
}


def until(check: object, what: str) -> None:
    deadline = time.monotonic() + 60
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def backup(url: str, to: Path, redis_dir: Path) -> None:
    """BGSAVE, wait for it, copy the snapshot: Redis serves all along."""
    client = redis.Redis.from_url(url)
    snapshot = redis_dir / "dump.rdb"
    assert not snapshot.exists()
    client.bgsave(schedule=True)  # after an append-only file rewrite, if one runs

    def saved() -> bool:
        info = client.info("persistence")
        return snapshot.exists() and info["rdb_bgsave_in_progress"] == 0

    until(saved, "BGSAVE did not finish")
    assert client.info("persistence")["rdb_last_bgsave_status"] == "ok"
    shutil.copy(redis_dir / "dump.rdb", to)
    client.close()


def restore(backup_file: Path, redis_dir: Path) -> RedisServer:
    """Into an empty directory: the snapshot alone, then the append-only file made from it
    (CONFIG SET appendonly yes), then Redis restarted with the file, as production runs."""
    redis_dir.mkdir()
    shutil.copy(backup_file, redis_dir / "dump.rdb")
    server = RedisServer(redis_dir, aof=False).start()
    client = redis.Redis.from_url(server.url)
    client.config_set("appendonly", "yes")
    until(
        lambda: (
            client.info("persistence")["aof_rewrite_in_progress"] == 0
            and client.info("persistence")["aof_rewrite_scheduled"] == 0
            and (redis_dir / "appendonlydir").exists()
        ),
        "the append-only file was not written from the snapshot",
    )
    client.close()
    server.stop()
    server.aof = True
    return server.start()


@pytest.fixture
def servers() -> Iterator[list[RedisServer]]:
    """The Redis servers a test starts, stopped after it however it ends."""
    started: list[RedisServer] = []
    yield started
    for server in started:
        server.stop()


def test_the_job_in_flight_ends_after_redis_is_restored(
    tmp_path: Path, kube: tuple[KubeApiServer, DwsClient], servers: list[RedisServer]
) -> None:
    first = RedisServer(tmp_path / "redis", aof=True)
    servers.append(first)
    (tmp_path / "redis").mkdir()
    first.start()
    for name in ("app1", "app2"):
        (tmp_path / name).mkdir()
    app = eager_app(tmp_path / "app1", first.url, kube[0].url, **ENV)
    store = store_of_app(app)
    run = Run()
    drive(app, store, [("job.run", {"jobid": JOBID, "userid": 1001, "R": make_r("c[1-2]")})], run)
    verdict = store.releases.get(JOBID)
    assert verdict is not None and verdict.status == 0  # its nodes were let start
    held = store.vnipool.holding(JOBID)
    assert held
    backup(first.url, tmp_path / "backup.rdb", tmp_path / "redis")
    store.close()
    first.kill()  # Redis and its files are lost
    shutil.rmtree(tmp_path / "redis")

    second = restore(tmp_path / "backup.rdb", tmp_path / "redis-restored")
    servers.append(second)
    app = eager_app(tmp_path / "app2", second.url, kube[0].url, **ENV)
    store = store_of_app(app)
    assert store.vnipool.holding(JOBID) == held  # the job in flight is back
    drive(app, store, [("job.cleanup", {"jobid": JOBID})], run)
    assert JOBID not in store.jobs.jobids()
    assert store.vnipool.holding(JOBID) == []
    assert store.vnipool.query()["quarantine"] == {}
    entries, _ = store.ledger.scan(100)
    assert entries == []
    store.close()

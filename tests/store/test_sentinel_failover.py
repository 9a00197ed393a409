"""With a sentinel:// URL the store follows a Redis failover: records survive, writes resume."""

from __future__ import annotations

import subprocess
import time

import redis

from pipeline.errors import StoreUnavailable
from pipeline.store import JobRecord, Store
from tests.sentinel import sentinel_cluster

__all__ = ["sentinel_cluster"]  # the fixture


def retry(action, timeout_s: float = 30):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return action()
        except StoreUnavailable:
            assert time.monotonic() < deadline, "the store never recovered"
            time.sleep(0.2)


def test_records_survive_a_failover_and_writes_resume(
    sentinel_cluster: tuple[int, subprocess.Popen[bytes], int],
) -> None:
    sentinel_port, master, replica_port = sentinel_cluster
    store = Store.from_url(f"sentinel://127.0.0.1:{sentinel_port}/coral2", "ha")
    replica = redis.Redis(port=replica_port)
    sentinel = redis.Redis(port=sentinel_port, decode_responses=True)
    try:
        follow_a_failover(store, master, replica, sentinel)
    finally:  # the pool a sentinel gives is not the client's own: closing it leaves it open
        pool = store.client.connection_pool
        pool.disconnect()
        for asked in pool.sentinel_manager.sentinels:  # type: ignore[attr-defined]
            asked.close()
        replica.close()
        sentinel.close()


def follow_a_failover(
    store: Store, master: subprocess.Popen[bytes], replica: redis.Redis, sentinel: redis.Redis
) -> None:
    assert store.jobs.create(JobRecord(jobid=1, hosts=["c1"]))
    deadline = time.monotonic() + 20
    while replica.get("ha:job:1") is None:
        assert time.monotonic() < deadline, "the replica never caught up"
        time.sleep(0.05)
    deadline = time.monotonic() + 30
    while not any(  # the sentinel learns replicas from the master's INFO (every few seconds)
        r.get("flags") == "slave" and r.get("master-link-status") == "ok"
        for r in sentinel.sentinel_slaves("coral2")
    ):
        assert time.monotonic() < deadline, "the sentinel never discovered the replica"
        time.sleep(0.1)
    master.kill()
    master.wait()
    record = retry(
        lambda: store.jobs.update(1, lambda r: r.model_copy(update={"state": "after-failover"}))
    )
    assert record is not None
    assert (record.hosts, record.state) == (["c1"], "after-failover")
    assert replica.info("replication")["role"] == "master"

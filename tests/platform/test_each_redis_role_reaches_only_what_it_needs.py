"""The Redis ACL file of ``coral2-pipeline redis-acl``: each node's own user can push its
answers and read its own queue, and nothing of the job store, the other queues, other nodes
or kombu's shared bookkeeping;
the monitoring user reads and writes nothing; the management user does the pipeline's
work but cannot administer Redis; no connection logs in as the default user."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
import redis
from coral2_sim.redis_server import RedisServer

ROLES = ("management", "monitoring")


@pytest.fixture(scope="module")
def users(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, redis.Redis]]:
    work = tmp_path_factory.mktemp("acl")
    argv = [sys.executable, "-m", "pipeline.cli", "redis-acl", "--nodes", "n[1-2]"]
    argv += ["--node-passwords", str(work), "--make-missing"]
    for role in ROLES:
        path = work / f"{role}.pass"
        path.touch(mode=0o600)
        path.write_text(f"{role}-password\n")
        argv += ["--password-file", f"{role}={path}"]
    env = {"PATH": "/usr/bin:/bin", "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "coral2"}
    aclfile = work / "users.acl"
    aclfile.write_text(
        subprocess.run(argv, check=True, capture_output=True, env=env, text=True).stdout
    )
    with RedisServer(work, aclfile=aclfile, login=("management", "management-password")) as server:
        clients = {
            role: redis.Redis(port=server.port, username=role, password=f"{role}-password")
            for role in ROLES
        }
        node_password = (work / "n1.pass").read_text().strip()
        clients["node"] = redis.Redis(port=server.port, username="node-n1", password=node_password)
        clients["management"].set("coral2:job:1", "{}")
        clients["management"].lpush("lifecycle", "m")
        yield clients
        for client in clients.values():
            client.close()


def refused(call: object) -> None:
    assert callable(call)
    with pytest.raises(redis.exceptions.NoPermissionError):
        call()


def test_a_node_appends_its_answers_and_reads_its_own_queue(users: dict[str, redis.Redis]) -> None:
    node = users["node"]
    assert node.xadd("coral2:answers:n1", {"task": "job.prolog_done"})
    refused(lambda: node.xadd("coral2:answers:n2", {"task": "job.prolog_done"}))
    refused(lambda: node.xadd("coral2:answers", {"task": "job.prolog_done"}))
    node.lpush("node.n1", "work")
    assert node.brpop(["node.n1"], timeout=1) == (b"node.n1", b"work")


def test_a_node_reads_no_job_record_and_no_other_queue(users: dict[str, redis.Redis]) -> None:
    node = users["node"]
    refused(lambda: node.get("coral2:job:1"))
    refused(lambda: node.lrange("lifecycle", 0, -1))
    refused(lambda: node.brpop(["lifecycle"], timeout=1))
    refused(lambda: node.lpush("lifecycle", "a task of its own choosing"))
    refused(lambda: node.xrange("coral2:answers:n1"))  # not even its own: it only appends
    refused(lambda: node.xadd("coral2:outbox", {"kind": "drain"}))
    refused(lambda: node.brpop(["node.n2"], timeout=1))
    refused(lambda: node.lpush("housekeeping", "forged"))
    refused(lambda: node.lpush("node.n2", "forged"))


def test_a_node_cannot_touch_kombus_shared_bookkeeping(users: dict[str, redis.Redis]) -> None:
    node = users["node"]
    # the shared unacked hash and index: the management side restores their entries
    refused(lambda: node.hset("unacked", "tag", '[{"body": "x"}, "", "coral2:job:5:lock"]'))
    refused(lambda: node.zadd("unacked_index", {"tag": 0}))
    # the binding tables kombu routes a direct exchange's messages by
    refused(lambda: node.sadd("_kombu.binding.node.n1", "node.n1\x06\x16\x06\x16timeouts"))
    refused(lambda: node.sadd("_kombu.binding.lifecycle", "x"))
    # and no unacked bookkeeping of its own: the ledger redelivers, not kombu
    refused(lambda: node.hset("node.n1:unacked", "tag", "entry"))
    refused(lambda: node.zadd("node.n1:unacked_index", {"tag": 0}))


def test_a_node_sets_a_dead_letter_aside_on_its_own_stream_alone(
    users: dict[str, redis.Redis],
) -> None:
    node = users["node"]
    assert node.xadd("coral2:answers:n1", {"task": "node.dead_letter", "raw": "x"})
    refused(lambda: node.lpush("coral2:deadletters", "{}"))
    refused(lambda: node.ltrim("coral2:deadletters", 0, 0))
    refused(lambda: node.incr("coral2:deadletters:count"))
    refused(lambda: node.lrange("coral2:deadletters", 0, -1))


def test_a_node_deletes_nothing_and_runs_no_script(users: dict[str, redis.Redis]) -> None:
    node = users["node"]
    refused(lambda: node.delete("lifecycle"))
    refused(lambda: node.delete("node.n1"))
    refused(lambda: node.eval("return 1", 0))
    refused(lambda: node.keys("*"))


def test_monitoring_reads_and_writes_nothing(users: dict[str, redis.Redis]) -> None:
    monitoring = users["monitoring"]
    assert monitoring.get("coral2:job:1") == b"{}"
    refused(lambda: monitoring.set("coral2:job:1", "forged"))
    refused(lambda: monitoring.lpush("lifecycle", "forged"))
    refused(lambda: monitoring.delete("coral2:job:1"))


def test_management_cannot_administer_redis(users: dict[str, redis.Redis]) -> None:
    management = users["management"]
    refused(lambda: management.config_set("appendonly", "no"))
    refused(management.flushall)
    refused(management.acl_list)
    refused(management.shutdown)


def test_no_connection_logs_in_as_the_default_user(users: dict[str, redis.Redis]) -> None:
    port = users["node"].connection_pool.connection_kwargs["port"]
    with (
        redis.Redis(port=port) as anonymous,
        pytest.raises((redis.AuthenticationError, redis.ResponseError)),
    ):
        anonymous.get("coral2:job:1")
    with (
        redis.Redis(port=port, username="default", password="guess") as default,
        pytest.raises((redis.AuthenticationError, redis.ResponseError)),
    ):
        default.get("coral2:job:1")

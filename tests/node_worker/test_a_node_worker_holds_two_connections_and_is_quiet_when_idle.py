"""A node worker, one per compute node at El Capitan's 11,136, holds at most two Redis
connections — its blocking read and one for everything else — idle and while it runs
jobs, and sends nothing while idle but that read and its own heartbeat (one SET every
``pipeline.node_heartbeat`` seconds, 30 by default): no Celery heartbeats, no task events,
no remote-control subscription, no sweeps of the unacked index."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from coral2_sim.children import die_with_parent
from coral2_sim.redis_server import RedisServer
from coral2_sim.sockets import connections

from pipeline.platform.answers import answers_key
from pipeline.platform.app import create_app
from pipeline.settings import load_settings

HOST = "quiet01"


@pytest.fixture(scope="module")
def node(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[RedisServer, int, dict[str, str]]]:
    work = tmp_path_factory.mktemp("quiet")
    with RedisServer(work) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")}
        env.update(
            CORAL2_PIPELINE_PIPELINE__BROKER_URL=server.url,
            CORAL2_PIPELINE_PIPELINE__KEY_PREFIX=f"answers-{uuid.uuid4().hex[:6]}",
        )
        argv = [sys.executable, "-m", "pipeline.cli", "node-worker", "--hostname", HOST]
        argv += ["--backend", "systemd", "--nic", "simulated", "--state-dir", str(work / "st")]
        with (work / "node.log").open("wb") as log:
            proc = subprocess.Popen(die_with_parent(argv), env=env, stdout=log, stderr=log)
        try:
            client = redis.Redis.from_url(server.url, decode_responses=True)
            deadline = time.monotonic() + 60
            while not any(c.get("cmd") == "brpop" for c in client.client_list()):
                assert proc.poll() is None, Path(work / "node.log").read_text()
                assert time.monotonic() < deadline, "the node worker never read its queue"
                time.sleep(0.1)
            # its start (the one sweep of the unacked index, its bindings) uses a connection
            # of its own: wait until it is closed, however long a loaded machine takes
            steady = 0
            while steady < 50:
                assert time.monotonic() < deadline + 60, "the node worker's start never ended"
                steady = steady + 1 if connections(proc.pid, server.port) <= 2 else 0
                time.sleep(0.02)
            yield server, proc.pid, env
        finally:
            proc.terminate()
            proc.wait(timeout=60)


def commands(client: redis.Redis) -> dict[str, int]:
    stats: dict[str, Any] = client.info("commandstats")
    return {
        name.removeprefix("cmdstat_"): int(value["calls"])
        for name, value in stats.items()
        if not name.startswith(("cmdstat_info", "cmdstat_config"))
    }


def test_an_idle_node_worker_holds_two_connections_and_sends_only_its_read_and_beat(
    node: tuple[RedisServer, int, dict[str, str]],
) -> None:
    server, pid, env = node
    client = redis.Redis.from_url(server.url)
    assert connections(pid, server.port) == 2
    client.config_resetstat()
    time.sleep(3.0)
    sent = commands(client)
    assert set(sent) <= {"brpop", "set"}, sent
    assert sent.get("set", 0) <= 1  # one node, a beat every 30 s
    assert connections(pid, server.port) == 2
    # the beat: its own node's key, kept three beats
    alive = f"{env['CORAL2_PIPELINE_PIPELINE__KEY_PREFIX']}:node-alive:{HOST}"
    assert 0 < client.ttl(alive) <= 90


def test_a_node_worker_running_jobs_never_holds_more_than_two(
    node: tuple[RedisServer, int, dict[str, str]],
) -> None:
    server, pid, env = node
    settings = load_settings(env={k: v for k, v in env.items() if k.startswith("CORAL2_")})
    app = create_app(settings, set_current=False)
    answers = redis.Redis.from_url(server.url)
    stream = answers_key(settings.pipeline, HOST)
    most = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal most
        while not done.is_set():
            most = max(most, connections(pid, server.port))
            time.sleep(0.005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        queue = settings.pipeline.queues.node_prefix + HOST
        jobs = 40
        for jobid in range(1, jobs + 1):
            kwargs = {"hostname": HOST, "jobid": jobid, "userid": 1001}
            cxi = {"vnis": [2000 + jobid], "ncores": 4}
            app.send_task("node.prolog", kwargs={**kwargs, "cxi": cxi}, queue=queue)
            app.send_task("node.epilog", kwargs={**kwargs, "cxi": cxi}, queue=queue)
        deadline = time.monotonic() + 120
        while answers.xlen(stream) < 2 * jobs:
            assert time.monotonic() < deadline, f"{answers.xlen(stream)} answers of {2 * jobs}"
            time.sleep(0.02)
    finally:
        done.set()
        sampler.join()
    assert 1 <= most <= 2

"""What one node worker costs the broker: Redis connections and commands per second, idle
and while it runs jobs' node prologs and epilogs.

One ``coral2-pipeline node-worker`` process serves one hostname against a Redis of
its own (simulated Cassini NICs; no clientmount), as on a compute node. Connections
are the process's own established TCP sockets to the broker's port (Linux's
``/proc``), sampled every 20 ms while jobs run, the most seen kept; commands are
the broker's ``INFO commandstats``, less the benchmark's own.

``python -m benchmarks.nodeconn [--idle 60] [--jobs 50]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import redis
from celery import Celery
from coral2_sim.children import die_with_parent
from coral2_sim.redis_server import RedisServer
from coral2_sim.sockets import connections

from pipeline.platform.answers import answers_key
from pipeline.platform.app import create_app
from pipeline.settings import load_settings

HOST = "bench01"


def _commands(client: redis.Redis) -> int:
    stats: dict[str, Any] = client.info("commandstats")
    return sum(
        int(v.get("calls", 0))
        for k, v in stats.items()
        if not k.startswith(("cmdstat_info", "cmdstat_client", "cmdstat_config"))
    )


def _settle(client: redis.Redis, timeout_s: float = 60.0) -> None:
    """Wait until the node worker reads its queue, and its start is over."""
    deadline = time.monotonic() + timeout_s
    while not any(c.get("cmd") == "brpop" for c in client.client_list()):
        if time.monotonic() > deadline:
            raise RuntimeError("the node worker never started reading its queue")
        time.sleep(0.1)
    time.sleep(2.0)  # its start-up sweep and binding writes are done


def bench_node_connections(idle_s: float = 60.0, jobs: int = 50) -> dict[str, float]:
    """Connections and commands/s of one node worker, idle and during ``jobs`` jobs."""
    work = Path(tempfile.mkdtemp(prefix="coral2-nodeconn-"))
    with RedisServer(work) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")}
        env.update(
            CORAL2_PIPELINE_PIPELINE__BROKER_URL=server.url,
        )
        argv = [sys.executable, "-m", "pipeline.cli", "node-worker", "--hostname", HOST]
        argv += ["--backend", "systemd", "--nic", "simulated", "--state-dir", str(work / "st")]
        log = (work / "node-worker.log").open("wb")
        proc = subprocess.Popen(die_with_parent(argv), env=env, stdout=log, stderr=log)
        try:
            return _measure(server, proc.pid, env, idle_s, jobs)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
            log.close()


def _measure(
    server: RedisServer, pid: int, env: dict[str, str], idle_s: float, jobs: int
) -> dict[str, float]:
    url = server.url
    client = redis.Redis.from_url(url, decode_responses=True)
    _settle(client)
    idle_connections = connections(pid, server.port)
    client.config_resetstat()
    time.sleep(idle_s)
    idle_rate = _commands(client) / idle_s

    settings = load_settings(env={k: v for k, v in env.items() if k.startswith("CORAL2_")})
    app: Celery = create_app(settings, set_current=False)
    sender = redis.Redis.from_url(url)
    most = [idle_connections]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            most[0] = max(most[0], connections(pid, server.port))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    with app.connection_for_write() as conn:
        client.config_resetstat()
        start = time.monotonic()
        sampler.start()
        queue = settings.pipeline.queues.node_prefix + HOST
        for jobid in range(1, jobs + 1):
            cxi = {"vnis": [1024 + jobid], "ncores": 8}
            common = {"hostname": HOST, "jobid": jobid, "userid": 1001, "cxi": cxi}
            app.send_task("node.prolog", kwargs=common, queue=queue, connection=conn)
            app.send_task("node.epilog", kwargs=common, queue=queue, connection=conn)
        stream = answers_key(settings.pipeline, HOST)  # nobody reads it here
        while sender.xlen(stream) < 2 * jobs:  # every prolog and epilog answered
            if time.monotonic() - start > 300:
                raise RuntimeError("the node worker did not answer every job in 300 s")
            time.sleep(0.02)
        seconds = time.monotonic() - start
        done.set()
        sampler.join()
        busy = _commands(client)
    return {
        "idle_connections": idle_connections,
        "idle_commands_per_s": idle_rate,
        "busy_connections": most[0],
        # what the node worker sent per job (the sender's own LPUSHes are 2 a job)
        "commands_per_job": (busy - 2 * jobs) / jobs,
        "busy_seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=float, default=60.0, help="idle window (s)")
    parser.add_argument("--jobs", type=int, default=50, help="prolog+epilog pairs")
    args = parser.parse_args()
    r = bench_node_connections(args.idle, args.jobs)
    print(
        f"one node worker: idle {r['idle_connections']:.0f} connections, "
        f"{r['idle_commands_per_s']:.3f} commands/s; running {args.jobs} jobs: at most "
        f"{r['busy_connections']:.0f} connections, {r['commands_per_job']:.1f} commands "
        f"per job (prolog + epilog) in {r['busy_seconds']:.1f} s"
    )


if __name__ == "__main__":
    main()

"""What one Prometheus scrape of the exporter, one ``coral2-pipeline status`` and one
``slingshot pool`` cost at El Capitan's size: 11,136 computes expected to run a node
worker, each with a connection of its own to Redis named as a node worker names it and a
heartbeat, 5,000 jobs in flight (each holding two VNIs of a 64,512-VNI pool, a quarter of
them a hardware-collective reservation), and messages waiting on some node queues.

The exporter's and ``status``'s CPU is their own process's; Redis's is read from its
``INFO cpu`` around the runs, so it is what each scrape costs the one server every node
shares.

``python -m benchmarks.exporter [--jobs 5000] [--nodes 11136] [--scrapes 20]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import redis
from coral2_sim.redis_server import RedisServer

from benchmarks.servers import percentile
from pipeline.cli import main as cli
from pipeline.cli.exporter_cmd import PipelineCollector
from pipeline.cli.slingshot_cmd import print_pool
from pipeline.model.hwcoll import Reservation
from pipeline.model.job import JobRecord
from pipeline.model.node_client import client_name
from pipeline.settings import load_settings
from pipeline.store import Store

#: the VNI universe of the benchmark: 64,512 VNIs, as a site's pool may be
UNIVERSE = "1024-65535"
#: El Capitan's computes
NODES = 11_136
PREFIX = "bench"


def _fill(store: Store, jobs: int, nodes: int) -> None:
    store.vnipool.configure(UNIVERSE)
    for jobid in range(1, jobs + 1):
        hwcoll = None
        if jobid % 4 == 0:
            hwcoll = Reservation(fm_job_id=f"fm{jobid}", mcast_limit=4, token="t", step="1")
        record = JobRecord(
            jobid=jobid,
            userid=1000,
            workflow=f"fluxjob-{jobid}",
            hosts=[f"compute{jobid % nodes + 1}"],
            state="PreRun",
            hwcoll=hwcoll,
        )
        store.jobs.create(record)
        store.vnipool.reserve(jobid, 2)
    # the computes the lifecycle workers expect node workers on, as one notes them
    store.expected_node_workers.publish(_hosts(nodes))
    pipe = store.client.pipeline(transaction=False)
    for host in _hosts(nodes)[::100]:  # a message waiting on every hundredth node's queue
        pipe.lpush(f"node.{host}", b"{}")
    pipe.execute()


def _hosts(nodes: int) -> list[str]:
    return [f"compute{i}" for i in range(1, nodes + 1)]


@contextlib.contextmanager
def _node_workers(port: int, hosts: list[str], ttl_s: int = 3600) -> Iterator[None]:
    """A connection per node, named and beating as a node worker's is (all but the last
    ten beat: those are the silent ones a real machine has), held open throughout."""
    held: list[socket.socket] = []
    try:
        for i, host in enumerate(hosts):
            conn = socket.create_connection(("127.0.0.1", port))
            words = [["CLIENT", "SETNAME", client_name([host])]]
            if i < len(hosts) - 10:
                words.append(["SET", f"{PREFIX}:node-alive:{host}", "1", "EX", str(ttl_s)])
            conn.sendall(b"".join(_resp(w) for w in words))
            _replies(conn, len(words))
            held.append(conn)
        yield
    finally:
        for conn in held:
            conn.close()


def _resp(words: list[str]) -> bytes:
    out = [f"*{len(words)}\r\n".encode()]
    for word in words:
        data = word.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def _replies(conn: socket.socket, n: int) -> None:
    got = b""
    while got.count(b"\r\n") < n:
        chunk = conn.recv(4096)
        if not chunk:
            raise ConnectionError("redis-server closed a node worker's connection")
        got += chunk
    if not all(line.startswith(b"+OK") for line in got.split(b"\r\n")[:n]):
        raise ConnectionError(f"redis-server refused a node worker's setup: {got!r}")


def _redis_cpu_s(client: redis.Redis) -> float:
    info: Any = client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def _cpu_ms(
    work: Callable[[], object], runs: int, client: redis.Redis
) -> tuple[list[float], float]:
    """Each run's CPU ms in this process, and Redis's CPU ms per run."""
    spent = []
    redis_began = _redis_cpu_s(client)
    for _ in range(runs):
        began = time.process_time()
        work()
        spent.append((time.process_time() - began) * 1000)
    return spent, (_redis_cpu_s(client) - redis_began) * 1000 / runs


def _process_cpu_ms(env: dict[str, str], runs: int) -> float:
    """The CPU ms of a whole ``coral2-pipeline status`` process, its start and imports
    included, as a monitoring system runs it (the median of ``runs``)."""
    spent = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [sys.executable, "-m", "pipeline.cli", "status"],
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        spent.append(used * 1000)
    return percentile(spent, 50)


def _raise_file_limit(wanted: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


def bench_exporter(jobs: int = 5000, nodes: int = NODES, scrapes: int = 20) -> dict[str, float]:
    """CPU ms (p50, max) of a scrape and of ``status`` (theirs and Redis's), and of
    ``slingshot pool``, text and JSON."""
    _raise_file_limit(nodes + 200)
    work = Path(tempfile.mkdtemp(prefix="coral2-bench-exporter-"))
    (work / "redis.conf").write_text(f"maxclients {nodes + 100}\n")
    server = RedisServer(work, config=work / "redis.conf", nofile=nodes + 200)
    with server, _node_workers(server.port, _hosts(nodes)):
        env = {
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": server.url,
            "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": PREFIX,
        }
        settings = load_settings(env=env)
        store = Store.from_url(server.url, PREFIX)
        _fill(store, jobs, nodes)
        collector = PipelineCollector(settings, store)
        scrape, scrape_redis = _cpu_ms(lambda: list(collector.collect()), scrapes, store.client)

        def status() -> None:
            with (
                contextlib.redirect_stdout(io.StringIO()),
                _environ(env),
            ):
                cli(["status"])

        status_cpu, status_redis = _cpu_ms(status, max(3, scrapes // 4), store.client)
        process = _process_cpu_ms(env, runs=3)

        def pool(as_json: bool) -> None:
            with contextlib.redirect_stdout(io.StringIO()):
                print_pool(settings, store, as_json=as_json)

        text, _ = _cpu_ms(lambda: pool(False), scrapes, store.client)
        as_json, _ = _cpu_ms(lambda: pool(True), scrapes, store.client)
        connected = int(store.client.info("clients")["connected_clients"])
        store.close()
    return {
        "jobs": jobs,
        "nodes": nodes,
        "clients": connected,
        "scrape_p50_ms": percentile(scrape, 50),
        "scrape_max_ms": max(scrape),
        "scrape_redis_ms": scrape_redis,
        "status_p50_ms": percentile(status_cpu, 50),
        "status_redis_ms": status_redis,
        "status_process_ms": process,
        "pool_p50_ms": percentile(text, 50),
        "pool_json_p50_ms": percentile(as_json, 50),
    }


@contextlib.contextmanager
def _environ(env: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--nodes", type=int, default=NODES)
    parser.add_argument("--scrapes", type=int, default=20)
    args = parser.parse_args()
    r = bench_exporter(args.jobs, args.nodes, args.scrapes)
    print(
        f"{r['nodes']:,} computes ({r['clients']:,} Redis clients), {r['jobs']:,} jobs: "
        f"a scrape {r['scrape_p50_ms']:.1f} ms CPU p50 ({r['scrape_max_ms']:.1f} max) "
        f"+ {r['scrape_redis_ms']:.1f} ms in Redis (target 50 ms); status "
        f"{r['status_p50_ms']:.1f} ms CPU + {r['status_redis_ms']:.1f} ms in Redis "
        f"(target 200 ms), a whole status process {r['status_process_ms']:.0f} ms; "
        f"slingshot pool {r['pool_p50_ms']:.1f} ms, --json "
        f"{r['pool_json_p50_ms']:.1f} ms"
    )


if __name__ == "__main__":
    main()

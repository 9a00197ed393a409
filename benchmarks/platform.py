"""Platform benchmarks: the Celery ceiling, API-server rates, watch → observe latency."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from celery.signals import task_prerun
from coral2_sim.kube.api import KubeApiServer
from kubernetes import client

from benchmarks.servers import percentile, redis_server
from pipeline.clients.k8s import DwsClient
from pipeline.services.watcher import Watcher
from pipeline.store import Store

ROOT = Path(__file__).resolve().parents[1]
G, V = "dataworkflowservices.github.io", "v1alpha7"


def broker_message_cpu(messages: int = 3000) -> dict[str, float]:
    """CPU µs of one put + get + ack through kombu's Redis transport and through ours
    (pipeline/platform/broker.py: one Redis client per channel instead of one per command),
    both with kombu's ack emulation; and through ours as the pipeline configures it
    (``configured``: no ack emulation, pipeline/platform/config.py)."""
    from kombu import Connection

    from pipeline.platform.broker import RedisTransport
    from pipeline.platform.config import celery_config
    from pipeline.settings import load_settings

    configured = celery_config(load_settings(env={}))["broker_transport_options"]
    out: dict[str, float] = {}
    with redis_server() as url:
        for label, options in (
            ("kombu", {}),
            ("ours", {"transport": RedisTransport}),
            ("configured", {"transport": RedisTransport, "transport_options": configured}),
        ):
            with Connection(url, **options) as conn:
                queue = conn.SimpleQueue(f"bench-{uuid.uuid4().hex[:8]}")
                for rounds, keep in ((200, False), (messages, True)):  # warm up, then measure
                    start = time.process_time()
                    for _ in range(rounds):
                        queue.put({"n": 1})
                        queue.get(timeout=10).ack()
                    if keep:
                        out[label] = 1e6 * (time.process_time() - start) / rounds
                queue.close()
    return out


def celery_ceiling(tasks: int = 1000) -> float:
    """No-op round trips per second through a prefork worker on our app config."""
    with redis_server() as url:
        env = {
            **os.environ,
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": url,
            "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "bench",
        }
        env.pop("CORAL2_PIPELINE_CONFIG", None)
        argv = [sys.executable, "-m", "celery", "-A", "pipeline.app", "worker", "--pool=prefork"]
        argv += ["--concurrency=2", "-Q", "housekeeping", "--without-gossip", "--without-mingle"]
        worker = subprocess.Popen(
            [*argv, "--loglevel=ERROR"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            from pipeline.platform.app import create_app
            from pipeline.settings import load_settings

            app = create_app(
                load_settings(env={k: v for k, v in env.items() if k.startswith("CORAL2_")})
            )
            ping = app.tasks["housekeeping.ping"]
            ping.delay("warm").get(timeout=60)
            start = time.perf_counter()
            results = [ping.delay(str(i)) for i in range(tasks)]
            for result in results:
                result.get(timeout=120)
            return tasks / (time.perf_counter() - start)
        finally:
            worker.terminate()
            worker.wait(timeout=30)


def api_rates(requests: int = 2000) -> tuple[float, float]:
    """GETs/s and merge-patches/s from one official client against the simulated API server."""
    with KubeApiServer() as server:
        api = client.ApiClient(client.Configuration(host=server.url))
        custom = client.CustomObjectsApi(api)
        custom.create_namespaced_custom_object(
            G, V, "default", "workflows", {"metadata": {"name": "fluxjob-1"}, "spec": {"n": 0}}
        )
        start = time.perf_counter()
        for _ in range(requests):
            custom.get_namespaced_custom_object(G, V, "default", "workflows", "fluxjob-1")
        gets = requests / (time.perf_counter() - start)
        start = time.perf_counter()
        for i in range(requests):
            custom.patch_namespaced_custom_object(
                G, V, "default", "workflows", "fluxjob-1", {"spec": {"n": i + 1}}
            )
        patches = requests / (time.perf_counter() - start)
        api.close()
        return gets, patches


def watch_to_observe(events: int = 200, interval_s: float = 0.02) -> tuple[float, float]:
    """Latency (ms) from a Workflow change to the start of its observe task: p50, p99.

    Changes arrive every ``interval_s`` (50/s by default), below the observe throughput.
    """
    from celery.contrib.testing.worker import start_worker

    from pipeline.platform.app import create_app
    from pipeline.settings import load_settings

    with redis_server() as url, KubeApiServer() as server:
        prefix = f"bench{uuid.uuid4().hex[:6]}"
        app = create_app(load_settings(env={
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": url,
            "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": prefix,
            "CORAL2_PIPELINE_PIPELINE__API_HOST": server.url,
        }))  # fmt: skip
        started: dict[int, float] = {}
        done = threading.Event()

        def record(task: Any = None, kwargs: Any = None, **_: Any) -> None:
            if task is not None and task.name == "dws.observe":
                started.setdefault(int(kwargs["jobid"]), time.perf_counter())
                if len(started) >= events:
                    done.set()

        task_prerun.connect(record, weak=False)
        api = client.ApiClient(client.Configuration(host=server.url))
        dws = DwsClient(api)
        store = Store.from_url(url, prefix)
        watcher = Watcher(store, dws, lambda n, k: app.send_task(n, kwargs=k), lease_s=1.0)
        thread = threading.Thread(target=watcher.run, daemon=True)
        sent: dict[int, float] = {}
        with start_worker(
            app,
            pool="threads",
            concurrency=4,
            perform_ping_check=False,
            queues=["lifecycle", "housekeeping", "timeouts"],
        ):
            thread.start()
            while not watcher.leading:
                time.sleep(0.01)
            for jobid in range(events):
                sent[jobid] = time.perf_counter()
                dws.create_workflow({"metadata": {"name": f"fluxjob-{jobid}"}, "spec": {}})
                time.sleep(interval_s)
            done.wait(timeout=120)
            watcher.stop()
            thread.join(timeout=10)
        task_prerun.disconnect(record)
        api.close()
        latencies = [(started[j] - sent[j]) * 1000 for j in sent if j in started]
        return percentile(latencies, 50), percentile(latencies, 99)


#: Run in a fresh interpreter: a management worker's imports, then one full collection
#: before and one after the process settles its heap (median of five each).
_PAUSE = """
import gc, statistics, time
import kubernetes.client, pipeline.app, pipeline.tasks  # what a worker imports
from pipeline.platform import heap
def pause():
    runs = []
    for _ in range(5):
        t = time.perf_counter(); gc.collect(); runs.append((time.perf_counter() - t) * 1000)
    return statistics.median(runs)
before, tracked = pause(), len(gc.get_objects())
heap.settle()
print(before, pause(), tracked)
"""


def collection_pause() -> tuple[float, float, int]:
    """A management process's full collection (ms) with its start-up heap in the
    collector's walk and once settled (``pipeline.platform.heap``), and how many objects
    the walk held before."""
    out = subprocess.run(
        [sys.executable, "-c", _PAUSE], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split()
    return float(out[0]), float(out[1]), int(out[2])

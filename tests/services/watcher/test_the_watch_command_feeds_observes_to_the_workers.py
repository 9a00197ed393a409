"""`coral2-pipeline watch` as a process: Workflow changes reach the workers as observe tasks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import redis
from celery import Celery
from coral2_sim.kube.api import KubeApiServer
from kubernetes import client

from pipeline.clients.k8s import DwsClient
from pipeline.store import Keys, Store

ROOT = Path(__file__).resolve().parents[3]


def test_the_watch_command_feeds_observes_to_the_workers(
    celery_app: Celery, worker: None, kube_api: KubeApiServer, redis_url: str, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_url,
        "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "celerytest",
        "CORAL2_PIPELINE_PIPELINE__API_HOST": kube_api.url,
    }
    env.pop("CORAL2_PIPELINE_CONFIG", None)
    store = Store(redis.Redis.from_url(redis_url), Keys("celerytest"))
    dws = DwsClient(client.ApiClient(client.Configuration(host=kube_api.url)))
    with (
        (tmp_path / "watch.log").open("w") as log,
        subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli", "watch", "--lease", "1"],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        ) as proc,
    ):
        try:
            dws.create_workflow(
                {"metadata": {"name": "fluxjob-701"}, "spec": {"desiredState": "Proposal"}}
            )
            dws.patch("workflows", "fluxjob-701", {"status": {"state": "Proposal", "ready": True}})
            deadline = time.monotonic() + 30
            while True:
                record = store.jobs.get(701)
                if record is not None and record.state == "Proposal:ready":
                    break
                assert time.monotonic() < deadline, (tmp_path / "watch.log").read_text()
                time.sleep(0.05)
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=20) == 0
    assert store.client.get(store.keys.watcher_leader) is None

"""A DW job's whole lifecycle: hooks, a real worker, the watcher and the simulated DWS."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from coral2_sim.demo.model import sample_path
from coral2_sim.dws import admission as dws_admission
from coral2_sim.dws.controller import DwsController
from coral2_sim.dws.fixtures import install_cluster
from coral2_sim.kube.api import KubeApiServer
from kubernetes import client

from pipeline.clients.k8s import DwsClient
from pipeline.errors import NotFound
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.services.hooks import Hooks
from pipeline.services.watcher import Watcher
from pipeline.settings import load_settings
from pipeline.store import Store

ROOT = Path(__file__).resolve().parents[2]
RESOURCES = [
    {
        "type": "node",
        "count": 2,
        "with": [
            {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
        ],
    }
]


def wait_for(predicate: Callable[[], Any], what: str, timeout_s: float = 60) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class System:
    def __init__(self, redis_url: str, tmp: Path) -> None:
        self.redis_url = redis_url.rsplit("/", 1)[0] + "/2"
        self.kube = KubeApiServer().start()
        dws_admission.install(self.kube.store)
        api = client.ApiClient(client.Configuration(host=self.kube.url))
        self.dws = DwsClient(api)
        self.mapping_path = str(sample_path("sample-rabbitmapping.json"))
        install_cluster(self.dws, RabbitMapping.load(self.mapping_path))
        self.controller = DwsController(api, latency_s=0.002).start()
        self.prefix = f"e2e{uuid.uuid4().hex[:8]}"
        self.env = {
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": self.redis_url,
            "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": self.prefix,
            "CORAL2_PIPELINE_PIPELINE__API_HOST": self.kube.url,
            "CORAL2_PIPELINE_RABBIT__MAPPING": self.mapping_path,
        }
        penv = (
            {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_")}
            | self.env
            | {"PYTHONPATH": str(ROOT)}
        )
        with (tmp / "worker.log").open("wb") as log:
            argv = [sys.executable, "-m", "celery", "-A", "pipeline.app", "worker"]
            argv += ["-Q", "lifecycle,timeouts,housekeeping", "--pool=threads", "--concurrency=4"]
            argv += ["--without-gossip", "--without-mingle", "--loglevel=WARNING"]
            self.worker = subprocess.Popen(
                argv, env=penv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
            )
        self.settings = load_settings(env=self.env)
        self.sender = Celery("e2e-sender", broker=self.redis_url, set_as_current=False)
        self.store = Store.from_url(self.redis_url, self.prefix)
        self.hooks = Hooks(self.settings, self.send, owner_uid=0)
        self.watcher = Watcher(self.store, self.dws, self.send, lease_s=1.0)
        self.thread = threading.Thread(target=self.watcher.run, daemon=True)
        self.thread.start()

    def send(self, name: str, kwargs: dict[str, Any]) -> None:
        queue = "housekeeping" if name == "storage.observe" else "lifecycle"
        self.sender.send_task(name, kwargs=kwargs, queue=queue)

    def messages(self) -> list[tuple[str, dict[str, Any]]]:
        entries: Any = self.store.client.xrange(self.store.keys.outbox)
        out = []
        for _, fields in entries:
            import json

            out.append((fields[b"kind"].decode(), json.loads(fields[b"payload"])))
        return out

    def stop(self) -> None:
        self.watcher.stop()
        self.thread.join(timeout=5)
        self.worker.terminate()
        self.worker.wait(timeout=30)
        self.controller.stop()
        self.kube.stop()


@pytest.fixture
def system(redis_url: str, tmp_path: Path) -> Iterator[System]:
    sys_ = System(redis_url, tmp_path)
    yield sys_
    sys_.stop()


def kinds(system: System, kind: str, jobid: int) -> list[dict[str, Any]]:
    return [p for k, p in system.messages() if k == kind and p.get("id") == jobid]


def test_an_xfs_job_goes_from_create_to_delete_with_each_flux_message_once(system: System) -> None:
    jobid = 9001
    system.hooks.dws_create(
        {
            "jobid": jobid,
            "userid": 1001,
            "dw_directives": "#DW jobdw type=xfs capacity=10GiB name=scratch",
            "resources": RESOURCES,
            "failure_tolerance": 0,
        }
    )
    update = wait_for(lambda: kinds(system, "resource-update", jobid), "resource-update")[0]
    assert update["resources"][0]["label"] == "rabbit"
    assert update["resources"][0]["with"][1] == {"type": "ssd", "count": 11, "exclusive": True}
    R = {
        "version": 1,
        "execution": {
            "R_lite": [{"rank": "0-1", "children": {"core": "0"}}],
            "nodelist": ["compute[01-02]"],
        },
    }
    system.hooks.dws_setup({"jobid": jobid, "R": R})
    prolog = wait_for(lambda: kinds(system, "prolog-remove", jobid), "prolog-remove")[0]
    assert prolog["variables"]["DW_JOB_scratch"].startswith("/mnt/nnf/")
    computes = system.dws.get("computes", f"fluxjob-{jobid}")["data"]
    assert computes == [{"name": "compute01"}, {"name": "compute02"}]
    system.hooks.dws_post_run({"jobid": jobid, "run_started": True})
    wait_for(lambda: kinds(system, "epilog-remove", jobid), "epilog-remove")

    def gone() -> bool:
        try:
            system.dws.get_workflow(f"fluxjob-{jobid}")
        except NotFound:
            return True
        return False

    wait_for(gone, "the workflow to be deleted")
    time.sleep(0.5)
    messages = system.messages()
    for once in ("resource-update", "prolog-remove", "epilog-remove"):
        assert len([m for m in messages if m[0] == once]) == 1, once
    memos = [p["memo"] for k, p in messages if k == "memo"]
    assert {"rabbit_workflow": f"fluxjob-{jobid}"} in memos
    assert {"rabbits": "rabbit1"} in memos
    timings = {p["key"] for k, p in messages if k == "kvs-put"}
    assert {
        "rabbit_workflow",
        "rabbit_proposal_timing",
        "rabbit_setup_timing",
        "rabbit_prerun_timing",
        "rabbit_teardown_timing",
        "rabbit_datamovements",
    } <= timings


def test_a_job_cancelled_before_running_skips_to_teardown(system: System) -> None:
    jobid = 9002
    system.hooks.dws_create(
        {
            "jobid": jobid,
            "userid": 1001,
            "dw_directives": "#DW jobdw type=gfs2 capacity=10GiB name=g1",
            "resources": RESOURCES,
            "failure_tolerance": 0,
        }
    )
    wait_for(lambda: kinds(system, "resource-update", jobid), "resource-update")
    system.hooks.dws_post_run({"jobid": jobid, "run_started": False})
    wait_for(lambda: kinds(system, "epilog-remove", jobid), "epilog-remove")
    assert kinds(system, "prolog-remove", jobid) == []


def test_duplicate_hooks_change_nothing_observable(system: System) -> None:
    jobid = 9003
    create = {
        "jobid": jobid,
        "userid": 1001,
        "dw_directives": "#DW jobdw type=raw capacity=10GiB name=blk",
        "resources": RESOURCES,
        "failure_tolerance": 0,
    }
    system.hooks.dws_create(create)
    system.hooks.dws_create(create)
    wait_for(lambda: kinds(system, "resource-update", jobid), "resource-update")
    R = {
        "version": 1,
        "execution": {
            "R_lite": [{"rank": "0-1", "children": {"core": "0"}}],
            "nodelist": ["compute[17-18]"],
        },
    }
    system.hooks.dws_setup({"jobid": jobid, "R": R})
    system.hooks.dws_setup({"jobid": jobid, "R": R})
    wait_for(lambda: kinds(system, "prolog-remove", jobid), "prolog-remove")
    system.hooks.dws_post_run({"jobid": jobid, "run_started": True})
    system.hooks.dws_post_run({"jobid": jobid, "run_started": True})
    wait_for(lambda: kinds(system, "epilog-remove", jobid), "epilog-remove")
    time.sleep(0.5)
    for once in ("resource-update", "prolog-remove", "epilog-remove"):
        assert len(kinds(system, once, jobid)) == 1, once
    assert [m["memo"] for m in kinds(system, "memo", jobid)] == [
        {"rabbit_workflow": f"fluxjob-{jobid}"},
        {"rabbits": "rabbit2"},
    ]

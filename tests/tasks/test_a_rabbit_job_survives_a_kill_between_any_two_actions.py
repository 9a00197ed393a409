"""A #DW job's Workflow work — its creation, the jobspec rewrite, Setup, every observe
that moves it through DataIn, PreRun, PostRun, DataOut and Teardown, and its deletion —
survives a worker killed between any two actions of any of its tasks (and after the
last, before the task ends): the message delivered again does what was left, so Flux
is told each thing exactly once, and nothing is left (no Workflow or child, no record
tracked, no deadline, no ledger entry, no lock)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from coral2_sim.demo.batch import DemoJob
from coral2_sim.dws import admission
from coral2_sim.dws.controller import DwsController
from coral2_sim.dws.fixtures import install_cluster
from coral2_sim.kube.api import KubeApiServer
from kubernetes import client

from pipeline.clients.k8s import DwsClient
from pipeline.errors import NotFound
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.store import Store
from tests.conftest import make_r
from tests.tasks.eager_app import TiB, eager_app, store_of_app
from tests.tasks.kill_points import Point, Run, drive

JOBID = 5151
NAME = f"fluxjob-{JOBID}"
#: what Flux must be told once each, in this order
TOLD = ["memo", "resource-update", "memo", "prolog-remove", "epilog-remove"]
Tasks = list[tuple[str, dict[str, Any]]]


@pytest.fixture
def dws_side() -> Iterator[tuple[str, DwsClient]]:
    """An API server with the DWS webhooks, rabbit1 serving c1 and c2, and the DWS
    controller; the URL and a client."""
    with KubeApiServer() as server:
        admission.install(server.store)
        api = client.ApiClient(client.Configuration(host=server.url))
        dws = DwsClient(api, outage_budget_s=5)
        install_cluster(dws, RabbitMapping.build({"rabbit1": (64 * TiB, ["c1", "c2"])}))
        controller = DwsController(api, latency_s=0.0).start()
        yield server.url, dws
        controller.stop()
        api.close()


def settled(dws: DwsClient) -> dict[str, Any] | None:
    """The Workflow once DWS is done with its desired state (None: deleted)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            workflow = dws.get_workflow(NAME)
        except NotFound:
            return None
        status = workflow.get("status") or {}
        reached = status.get("state") == workflow["spec"]["desiredState"]
        if reached and status.get("ready") and not workflow["metadata"].get("deletionTimestamp"):
            return workflow
        time.sleep(0.01)
    raise AssertionError(f"DWS did not settle {NAME} in 60 s")


def watcher(dws: DwsClient) -> Callable[[], Tasks]:
    """The watcher's part: one observe for each Workflow version DWS settles on."""
    last: list[str | None] = ["never observed"]

    def idle() -> Tasks:
        workflow = settled(dws)
        version = None if workflow is None else workflow["metadata"]["resourceVersion"]
        if version == last[0]:
            return []
        last[0] = version
        return [("dws.observe", {"jobid": JOBID})]

    return idle


def told(store: Store) -> list[str]:
    entries: Any = store.client.xrange(store.keys.outbox)
    return [f[b"kind"].decode() for _, f in entries if f[b"kind"] != b"kvs-put"]


def lifecycle(app: Celery, store: Store, dws: DwsClient, run: Run, kill: Point | None) -> None:
    """As dws-jobtap sends them: create in DEPEND, setup at RUN, post_run at the end."""
    idle = watcher(dws)
    create = {
        "jobid": JOBID, "userid": 1001,
        "directives": ["#DW jobdw type=xfs capacity=10GiB name=scratch"],
        "resources": DemoJob("xfs", 2).resources(), "failure_tolerance": 0,
    }  # fmt: skip
    drive(app, store, [("dws.create", create)], run, kill, idle=idle)
    assert "resource-update" in told(store)
    setup = {"jobid": JOBID, "R": make_r("c[1-2]")}
    drive(app, store, [("dws.setup", setup)], run, kill, idle=idle)
    assert "prolog-remove" in told(store)
    post_run = {"jobid": JOBID, "run_started": True}
    drive(app, store, [("dws.post_run", post_run)], run, kill, idle=idle)
    assert told(store) == TOLD
    left(store, dws)


def left(store: Store, dws: DwsClient) -> None:
    with pytest.raises(NotFound):
        dws.get_workflow(NAME)
    for plural in ("servers", "computes", "directivebreakdowns"):
        items, _ = dws.list_objects(plural)
        assert [i["metadata"]["name"] for i in items if NAME in i["metadata"]["name"]] == []
    assert JOBID not in store.jobs.jobids(), store.jobs.get(JOBID)
    assert [d for d in store.deadlines.pending() if d.jobid == JOBID] == []
    entries, _ = store.ledger.scan(1000)
    assert entries == []
    assert not store.client.exists(store.keys.lock(JOBID))


def new_app(tmp_path: Path, redis_url: str, kube_url: str) -> tuple[Celery, Store]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    app = eager_app(tmp_path, redis_url, kube_url)
    return app, store_of_app(app)


def test_the_rabbit_job_ends_right_whatever_gap_a_task_dies_in(
    tmp_path: Path, redis_url: str, dws_side: tuple[str, DwsClient]
) -> None:
    kube_url, dws = dws_side
    app, store = new_app(tmp_path / "clean", redis_url, kube_url)
    clean = Run()
    lifecycle(app, store, dws, clean, None)
    assert set(clean.runs) >= {"dws.create", "dws.setup", "dws.observe", "dws.post_run"}
    points = clean.points()
    for index, point in enumerate(points):
        app, store = new_app(tmp_path / str(index), redis_url, kube_url)
        run = Run()
        lifecycle(app, store, dws, run, point)
        assert run.killed == point

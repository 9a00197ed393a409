"""A job whose node messages pass ``pipeline.send_chunk`` sends the rest as ``job.send_nodes``
tasks that any worker process takes: each node still gets its prolog and its epilog, the job
starts once and leaves nothing, whatever gap between two actions a task dies in."""

from __future__ import annotations

from pathlib import Path

import pytest
from celery import Celery
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.store import Store
from tests.conftest import make_r
from tests.tasks.eager_app import eager_app, store_of_app
from tests.tasks.kill_points import Point, Run, drive
from tests.tasks.test_a_task_killed_between_any_two_of_its_actions_loses_nothing import ENV, left

JOBID = 4343
NODES = "c[1-3]"


@pytest.fixture
def kube_url(kube: tuple[KubeApiServer, DwsClient]) -> str:
    return kube[0].url


def spread_app(tmp_path: Path, redis_url: str, kube_url: str) -> tuple[Celery, Store]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    app = eager_app(tmp_path, redis_url, kube_url, CORAL2_PIPELINE_PIPELINE__SEND_CHUNK="1", **ENV)
    return app, store_of_app(app)


def lifecycle(tmp_path: Path, redis_url: str, kube_url: str, run: Run, kill: Point | None) -> Store:
    """The job on three nodes, one message a task: c1's from the job's own tasks, c2's and
    c3's from job.send_nodes."""
    app, store = spread_app(tmp_path, redis_url, kube_url)
    start = {"jobid": JOBID, "userid": 1001, "R": make_r(NODES)}
    drive(app, store, [("job.run", start)], run, kill)
    verdict = store.releases.get(JOBID)
    assert verdict is not None and verdict.status == 0, verdict  # every prolog answered
    drive(app, store, [("job.cleanup", {"jobid": JOBID})], run, kill)
    left(store, JOBID)  # every epilog answered: the VNIs are out of quarantine
    return store


def test_every_node_is_sent_its_work_by_one_task_or_another(
    tmp_path: Path, redis_url: str, kube_url: str
) -> None:
    store = lifecycle(tmp_path, redis_url, kube_url, Run(), None)
    ran = [e.what for e in store.timeline.read(JOBID) if e.what.startswith("job.send_nodes")]
    assert len(ran) == 4  # c2 and c3, one task each: their prologs, then their epilogs


def test_the_job_ends_right_whatever_gap_a_task_dies_in(
    tmp_path: Path, redis_url: str, kube_url: str
) -> None:
    run = Run()
    lifecycle(tmp_path / "clean", redis_url, kube_url, run, None)
    for index, point in enumerate(run.points()):
        try:
            lifecycle(tmp_path / str(index), redis_url, kube_url, Run(), point)
        except AssertionError as exc:
            raise AssertionError(f"killed at {point}: {exc}") from exc

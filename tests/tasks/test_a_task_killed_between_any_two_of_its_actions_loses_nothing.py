"""A job's node work — its VNI reservation, each node's prolog, the release that lets it
start, each node's epilog and the quarantine of its VNIs — survives a worker killed
between any two actions of any of its tasks (and after the last, before the task ends):
the message delivered again does what was left, so the job starts exactly once, its VNIs
go back to the pool, and nothing is left (no record tracked, no deadline, no ledger
entry, no tally, no lock, no VNI held)."""

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

ENV = {
    "CORAL2_PIPELINE_CRAY_SLINGSHOT__CXI_ENABLE": "true",
    "CORAL2_PIPELINE_PIPELINE__QUEUES__LIFECYCLE": "kp-lifecycle",
    "CORAL2_PIPELINE_PIPELINE__QUEUES__TIMEOUTS": "kp-timeouts",
    "CORAL2_PIPELINE_PIPELINE__QUEUES__HOUSEKEEPING": "kp-housekeeping",
}


@pytest.fixture
def kube_url(kube: tuple[KubeApiServer, DwsClient]) -> str:
    return kube[0].url


def new_app(tmp_path: Path, redis_url: str, kube_url: str) -> tuple[Celery, Store]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    app = eager_app(tmp_path, redis_url, kube_url, **ENV)
    return app, store_of_app(app)


def lifecycle(app: Celery, store: Store, run: Run, kill: Point | None) -> None:
    """One job on c1 and c2: RUN, every node's prolog, then CLEANUP and the epilogs."""
    jobid = 4242
    start = {"jobid": jobid, "userid": 1001, "R": make_r("c[1-2]")}
    drive(app, store, [("job.run", start)], run, kill)
    verdict = store.releases.get(jobid)
    assert verdict is not None and verdict.status == 0, verdict
    drive(app, store, [("job.cleanup", {"jobid": jobid})], run, kill)
    left(store, jobid)


def left(store: Store, jobid: int) -> None:
    assert jobid not in store.jobs.jobids(), store.jobs.get(jobid)
    assert store.vnipool.holding(jobid) == []
    assert store.vnipool.query()["quarantine"] == {}
    assert [d for d in store.deadlines.pending() if d.jobid == jobid] == []
    entries, _ = store.ledger.scan(1000)
    assert entries == []
    assert store.tally.nodes(jobid, "prolog") == set()
    assert not store.client.exists(store.keys.lock(jobid))


def every_point(tmp_path: Path, redis_url: str, kube_url: str) -> list[Point]:
    app, store = new_app(tmp_path / "clean", redis_url, kube_url)
    run = Run()
    lifecycle(app, store, run, None)
    return run.points()


def test_the_job_ends_right_whatever_gap_a_task_dies_in(
    tmp_path: Path, redis_url: str, kube_url: str
) -> None:
    points = every_point(tmp_path, redis_url, kube_url)
    every_task = {"job.run", "job.prologs", "job.answers_complete", "job.cleanup"}
    assert {name for name, _, _ in points} >= every_task
    for index, point in enumerate(points):
        app, store = new_app(tmp_path / str(index), redis_url, kube_url)
        run = Run()
        try:
            lifecycle(app, store, run, point)
        except AssertionError as exc:
            raise AssertionError(f"killed at {point}: {exc}") from exc
        assert run.killed == point


def test_a_run_after_the_jobs_cleanup_began_reserves_nothing(
    tmp_path: Path, redis_url: str, kube_url: str
) -> None:
    app, store = new_app(tmp_path, redis_url, kube_url)
    run = Run()
    drive(app, store, [("job.cleanup", {"jobid": 77})], run)
    drive(app, store, [("job.run", {"jobid": 77, "userid": 1001, "R": make_r("c1")})], run)
    assert store.vnipool.holding(77) == []
    assert store.releases.get(77) is None
    entries, _ = store.ledger.scan(1000)
    assert entries == []


def test_a_cleanup_between_the_reservation_and_the_node_plan_frees_the_vnis(
    tmp_path: Path, redis_url: str, kube_url: str
) -> None:
    """job.run reserved the VNIs, and the job.prologs it sent died before it recorded the
    job's node work; the job was cancelled, so its CLEANUP came before job.prologs was
    delivered again: every node of the reservation still gets its CXI epilog, the VNIs
    leave quarantine, and the late job.prologs sends no prolog."""
    app, store = new_app(tmp_path, redis_url, kube_url)
    run = Run()
    start = {"jobid": 99, "userid": 1001, "R": make_r("c[1-2]")}
    # job.prologs: the event, ExpectAnswers, the arming, then UpdateJob(node_work)
    before_plan = ("job.prologs", 0, 4)
    held = drive(app, store, [("job.run", start)], run, before_plan, redeliver=False)
    assert run.killed == before_plan and [name for name, _ in held] == ["job.prologs"]
    assert store.vnipool.holding(99)
    drive(app, store, [("job.cleanup", {"jobid": 99})], run)
    drive(app, store, held, run)
    assert store.releases.get(99) is None  # never let start
    left(store, 99)

"""A job whose VNI request the pool refuses (``vnicount`` 5) fails at RUN with the
cray-slingshot exception; whatever gap between two actions its ``job.run`` dies in, with
the run's copy delivered only after the job's ``job.cleanup`` (the job went to CLEANUP
meanwhile), the exception is sent at most once and nothing of the job is left. A 300-job
chaos run found one left tracked: its ``job.run`` died after making its record and
sending the exception, its ``job.cleanup`` found nothing recorded to clean and left the
record, and the copy, fenced off by the cleanup, did nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from tests.conftest import make_r
from tests.tasks.kill_points import Point, Run, drive
from tests.tasks.test_a_task_killed_between_any_two_of_its_actions_loses_nothing import (
    left,
    new_app,
)

JOBID = 4545
START = {"jobid": JOBID, "userid": 1001, "R": make_r("c1"), "option": {"vnicount": 5}}


@pytest.fixture
def kube_url(kube: tuple[KubeApiServer, DwsClient]) -> str:
    return kube[0].url


def lifecycle(tmp_path: Path, redis_url: str, kube_url: str, run: Run, kill: Point | None) -> None:
    app, store = new_app(tmp_path, redis_url, kube_url)
    held = drive(app, store, [("job.run", START)], run, kill, redeliver=False)
    drive(app, store, [("job.cleanup", {"jobid": JOBID})], run)
    drive(app, store, held, run)  # the killed run's message, delivered again
    exceptions = [
        fields[b"payload"]
        for _, fields in store.client.xrange(store.keys.outbox)  # type: ignore[union-attr]
        if fields[b"kind"] == b"exception"
    ]
    # a run killed before it sent the exception sends none after CLEANUP (the job is
    # over: nothing waits for it); never two
    assert len(exceptions) <= 1
    assert all(b"VNI count must be within 1-4" in e for e in exceptions)
    if kill is None:
        assert len(exceptions) == 1
    left(store, JOBID)


def test_the_job_fails_once_and_leaves_nothing_whatever_gap_its_run_dies_in(
    tmp_path: Path, redis_url: str, kube_url: str
) -> None:
    run = Run()
    lifecycle(tmp_path / "clean", redis_url, kube_url, run, None)
    points = [point for point in run.points() if point[0] == "job.run"]
    assert points
    for index, point in enumerate(points):
        try:
            lifecycle(tmp_path / str(index), redis_url, kube_url, Run(), point)
        except AssertionError as exc:
            raise AssertionError(f"killed at {point}: {exc}") from exc

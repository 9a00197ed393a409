"""A job that asked for no VNIs (``cray-slingshot=off``) still has node work; whatever gap
between two actions a task of it dies in, it starts once and its record is finished. A
300-job chaos run found one left tracked: its ``job.cleanup`` died between marking the
(empty) reservation released and finishing the record, and the re-run, seeing it
released, did nothing more."""

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

JOBID = 4444


@pytest.fixture
def kube_url(kube: tuple[KubeApiServer, DwsClient]) -> str:
    return kube[0].url


def lifecycle(tmp_path: Path, redis_url: str, kube_url: str, run: Run, kill: Point | None) -> None:
    app, store = new_app(tmp_path, redis_url, kube_url)
    start = {"jobid": JOBID, "userid": 1001, "R": make_r("c1"), "option": "off"}
    drive(app, store, [("job.run", start)], run, kill)
    verdict = store.releases.get(JOBID)
    assert verdict is not None and verdict.status == 0, verdict
    drive(app, store, [("job.cleanup", {"jobid": JOBID})], run, kill)
    left(store, JOBID)


def test_the_job_ends_right_whatever_gap_a_task_dies_in(
    tmp_path: Path, redis_url: str, kube_url: str
) -> None:
    run = Run()
    lifecycle(tmp_path / "clean", redis_url, kube_url, run, None)
    points = run.points()
    assert any(name == "job.cleanup" for name, _, _ in points)
    for index, point in enumerate(points):
        try:
            lifecycle(tmp_path / str(index), redis_url, kube_url, Run(), point)
        except AssertionError as exc:
            raise AssertionError(f"killed at {point}: {exc}") from exc

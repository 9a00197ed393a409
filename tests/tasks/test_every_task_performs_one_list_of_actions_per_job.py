"""Every task is one gather, one decision, one perform: through a whole job's node work
(RUN, every node's prolog and epilog, CLEANUP) and a whole #DW job's Workflow (create,
Setup, every observe to Teardown and the deletion), no run of any task performs more
than one list of actions for a job — so a mark that says work is done, performed last
in its list, follows all of that run's work."""

from __future__ import annotations

from pathlib import Path

from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from tests.tasks import test_a_rabbit_job_survives_a_kill_between_any_two_actions as rabbit
from tests.tasks import test_a_task_killed_between_any_two_of_its_actions_loses_nothing as nodes
from tests.tasks.kill_points import Run


def many(run: Run) -> dict[tuple[str, str, int], int]:
    return {key: n for key, n in run.performs.items() if n > 1}


def test_the_node_work_of_a_job_performs_once_per_task_run(
    tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    app, store = nodes.new_app(tmp_path, redis_url, kube[0].url)
    run = Run()
    nodes.lifecycle(app, store, run, None)
    performed = {name for name, _, _ in run.performs}
    assert performed >= {"job.run", "job.prologs", "job.answers_complete", "job.cleanup"}
    assert many(run) == {}


def test_a_rabbit_jobs_workflow_performs_once_per_task_run(
    tmp_path: Path, redis_url: str, dws_side: tuple[str, DwsClient]
) -> None:
    kube_url, dws = dws_side
    app, store = rabbit.new_app(tmp_path, redis_url, kube_url)
    run = Run()
    rabbit.lifecycle(app, store, dws, run, None)
    performed = {name for name, _, _ in run.performs}
    assert performed >= {"dws.create", "dws.setup", "dws.observe", "dws.post_run"}
    assert many(run) == {}


dws_side = rabbit.dws_side  # the fixture: an API server with DWS and its controller

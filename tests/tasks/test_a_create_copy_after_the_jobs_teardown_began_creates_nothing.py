"""A copy of ``dws.create`` that runs once the job's Workflow is on its way out — the
ledger sent it again while the first copy waited on a dead worker, and the job was
cancelled, torn down and its Workflow deleted in between — creates no Workflow again,
even though the job has not ended yet: ``dws.post_run``, ``dws.teardown``,
``dws.epilog_lost`` and ``dws.abort`` fence it off first."""

from __future__ import annotations

from contextlib import suppress
from typing import Any

import pytest
from celery import Celery
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.errors import NotFound
from pipeline.store import Store

DIRECTIVES = ["#DW jobdw type=xfs capacity=10GiB name=scratch"]
SLOT = {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
RESOURCES = [{"type": "node", "count": 1, "with": [SLOT]}]


def run(app: Celery, name: str, **kwargs: Any) -> Any:
    return app.tasks[name].apply(kwargs=kwargs).get()


def create(app: Celery, jobid: int) -> Any:
    return run(
        app, "dws.create", jobid=jobid, userid=1001, directives=DIRECTIVES, resources=RESOURCES,
        failure_tolerance=1,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("task", "kwargs"),
    [
        ("dws.post_run", {"run_started": False}),
        ("dws.teardown", {}),
        ("dws.epilog_lost", {"run_started": False}),
        ("dws.abort", {}),
    ],
)
def test_a_create_copy_after_the_workflow_was_deleted_creates_nothing(
    app: Celery,
    store: Store,
    kube: tuple[KubeApiServer, DwsClient],
    task: str,
    kwargs: dict[str, Any],
) -> None:
    jobid = 4400 + len(task)
    assert create(app, jobid) is True
    dws = kube[1]
    assert dws.get_workflow(f"fluxjob-{jobid}")
    run(app, task, jobid=jobid, **kwargs)
    # the Workflow goes (as its teardown ends, if the task did not delete it itself), and
    # the job is not finished yet
    with suppress(NotFound):
        dws.patch("workflows", f"fluxjob-{jobid}", {"metadata": {"finalizers": None}})
        dws.delete("workflows", f"fluxjob-{jobid}")
    with pytest.raises(NotFound):
        dws.get_workflow(f"fluxjob-{jobid}")
    assert jobid in store.jobs.jobids()
    assert create(app, jobid) is False
    with pytest.raises(NotFound):
        dws.get_workflow(f"fluxjob-{jobid}")


def test_a_create_that_comes_after_the_post_run_of_a_job_never_created_creates_nothing(
    app: Celery, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    run(app, "dws.post_run", jobid=4500, run_started=False)
    assert create(app, 4500) is False
    with pytest.raises(NotFound):
        kube[1].get_workflow("fluxjob-4500")

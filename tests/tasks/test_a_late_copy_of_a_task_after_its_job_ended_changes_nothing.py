"""A copy of a task that starts a job's work — dws.create, dws.setup, job.run — arriving
after the pipeline finished the job changes nothing: no Workflow is created again, no
finished job is tracked again or gets an exception, no VNI is reserved again."""

from __future__ import annotations

import json
from typing import Any

import pytest
from celery import Celery
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.errors import NotFound
from pipeline.store import JobRecord, Store
from tests.conftest import make_r


def run(app: Celery, name: str, **kwargs: Any) -> Any:
    return app.tasks[name].apply(kwargs=kwargs).get()


def outbox_kinds(store: Store) -> list[str]:
    entries: Any = store.client.xrange(store.keys.outbox)
    return [f[b"kind"].decode() for _, f in entries]


def ended_job(store: Store, jobid: int) -> None:
    store.jobs.create(JobRecord(jobid=jobid, userid=1001, workflow=f"fluxjob-{jobid}"))
    store.jobs.finish(jobid, retain_s=600)


def test_a_late_create_does_not_make_the_workflow_again(
    app: Celery, store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    ended_job(store, 41)
    kinds = outbox_kinds(store)
    created = run(
        app, "dws.create", jobid=41, userid=1001,
        directives=["#DW jobdw type=xfs capacity=10GiB name=scratch"],
        resources=[], failure_tolerance=1,
    )  # fmt: skip
    assert created is False
    with pytest.raises(NotFound):
        kube[1].get_workflow("fluxjob-41")
    assert 41 not in store.jobs.jobids()
    assert outbox_kinds(store) == kinds


def test_a_late_setup_neither_tracks_the_job_again_nor_raises_an_exception(
    app: Celery, store: Store
) -> None:
    ended_job(store, 42)
    assert run(app, "dws.setup", jobid=42, R=make_r("c[1-2]")) is False
    assert 42 not in store.jobs.jobids()
    assert "exception" not in outbox_kinds(store)


def test_a_late_run_reserves_no_vni(app: Celery, store: Store) -> None:
    ended_job(store, 43)
    run(app, "job.run", jobid=43, userid=1001, R=make_r("c[1-2]"))
    run(app, "job.prologs", jobid=43, R=make_r("c[1-2]"))
    assert store.vnipool.holding(43) == []
    assert store.releases.get(43) is None
    assert json.dumps(store.vnipool.query()["jobs"]) == "{}"

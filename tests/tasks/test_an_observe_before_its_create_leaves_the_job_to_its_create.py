"""A ``dws.observe`` of a job that has neither a Workflow nor a record — a duplicate or
early delivery that reached a worker before the job's ``dws.create`` — leaves the job
alone: its ``dws.create`` then makes the Workflow and tells Flux, where marking the job
finished would have left it in DEPEND for good. A tracked job whose Workflow is gone is
still finished."""

from __future__ import annotations

from typing import Any

from celery import Celery
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.store import Store
from pipeline.store.jobs import ENDED

SLOT = {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
CREATE: dict[str, Any] = {
    "jobid": 4242,
    "userid": 1001,
    "directives": ["#DW jobdw type=xfs capacity=10GiB name=scratch"],
    "resources": [{"type": "node", "count": 1, "with": [SLOT]}],
    "failure_tolerance": 0,
}


def outbox_kinds(store: Store, jobid: int) -> list[bytes]:
    entries: Any = store.client.xrange(store.keys.outbox)
    return [f[b"kind"] for _, f in entries if f[b"jobid"] == str(jobid).encode()]


def test_an_observe_before_the_create_marks_nothing_and_the_create_goes_on(
    app: Celery, store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    assert app.tasks["dws.observe"].apply(kwargs={"jobid": 4242}).get() is None
    assert store.client.hget(store.keys.marks(4242), ENDED) is None
    app.tasks["dws.create"].apply(kwargs=CREATE).get()
    assert kube[1].get_workflow("fluxjob-4242")["metadata"]["name"] == "fluxjob-4242"
    assert b"memo" in outbox_kinds(store, 4242)


def test_a_tracked_job_whose_workflow_is_gone_is_finished(
    app: Celery, store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    app.tasks["dws.create"].apply(kwargs={**CREATE, "jobid": 4243}).get()
    kube[1].remove_finalizer("fluxjob-4243")
    kube[1].delete_workflow("fluxjob-4243")
    record = store.jobs.get(4243)
    assert record is not None
    store.client.delete(store.keys.job(4243))  # its record gone, as after its retention
    app.tasks["dws.observe"].apply(kwargs={"jobid": 4243}).get()
    assert store.client.hget(store.keys.marks(4243), ENDED) == b"1"
    assert 4243 not in store.jobs.jobids()

"""dws.observe of a Workflow an admin deleted before DWS ever reconciled it (no status, and
none will come: DWS leaves a deleting Workflow without its finalizer alone) fails the job
with the exception that names the deletion and lets Flux's finalizer go, so the object
goes instead of holding the job for ever."""

from __future__ import annotations

import json

from celery import Celery
from coral2_sim.kube.api import KubeApiServer

from pipeline.errors import NotFound
from pipeline.model.workflow import WLM_FINALIZER
from pipeline.store import JobRecord
from pipeline.tasks.observe import observe
from tests.platform.results import result_of
from tests.tasks.test_observe_tasks import dws_of, store_of


def test_the_job_fails_naming_the_deletion_and_the_workflow_goes(
    celery_app: Celery, worker: None, kube_api: KubeApiServer
) -> None:
    dws = dws_of(kube_api)
    body = {
        "metadata": {"name": "fluxjob-611", "finalizers": [WLM_FINALIZER]},
        "spec": {"desiredState": "Proposal"},
    }
    dws.create_workflow(body)
    dws.delete_workflow("fluxjob-611")  # held by Flux's finalizer, with no status
    store = store_of(celery_app)
    store.jobs.create(JobRecord(jobid=611, workflow="fluxjob-611"))
    result_of(observe, jobid=611)
    try:
        left = dws.get_workflow("fluxjob-611")
    except NotFound:
        left = None
    assert left is None or WLM_FINALIZER not in left["metadata"].get("finalizers", [])
    entries = store.client.xrange(store.keys.outbox)
    notes = [
        json.loads(f[b"payload"])["note"]
        for _, f in entries  # type: ignore[union-attr]
        if f[b"kind"] == b"exception" and json.loads(f[b"payload"])["id"] == 611
    ]
    assert notes and "workflow fluxjob-611 was deleted" in notes[0]

"""A deadline falls due while the observe of its Workflow's latest change is still to come
(its worker was killed, the ledger's resend not yet due): the deadline observes the
Workflow first, as coral2_dws would have seen the event before its timer, and fires only
if what it guards still holds."""

from __future__ import annotations

from celery import Celery
from coral2_sim.kube.api import KubeApiServer

from pipeline.store import Store
from tests.tasks.test_lifecycle_deadlines import exceptions, fire, setup_job

IN_TC = {"state": "Setup", "ready": False, "status": "TransientCondition", "message": "busy"}


def observed(store: Store, jobid: int, rv: str) -> None:
    store.jobs.update(jobid, lambda r: r.model_copy(update={"observed_rv": rv, "state": "x"}))


def test_a_condition_that_cleared_unobserved_fails_no_job(
    celery_app: Celery, worker: None, kube_api: KubeApiServer
) -> None:
    store, dws = setup_job(celery_app, kube_api, 971, IN_TC, tc_since=1.0, tc_message="busy")
    observed(store, 971, dws.get_workflow("fluxjob-971")["metadata"]["resourceVersion"])
    cleared = {"state": "Setup", "ready": False, "status": "DriverWait", "message": ""}
    now = dws.patch("workflows", "fluxjob-971", {"status": cleared})

    fire(store, 971, "tc_timeout")

    assert exceptions(store, 971) == []
    record = store.jobs.get(971)
    assert record is not None
    assert record.tc_since is None
    assert record.observed_rv == now["metadata"]["resourceVersion"]
    assert "tc_timeout" not in record.deadlines


def test_a_condition_that_still_holds_once_observed_fails_the_job(
    celery_app: Celery, worker: None, kube_api: KubeApiServer
) -> None:
    store, dws = setup_job(celery_app, kube_api, 972, IN_TC, tc_since=1.0, tc_message="busy")
    observed(store, 972, dws.get_workflow("fluxjob-972")["metadata"]["resourceVersion"])
    still = {**IN_TC, "message": "still busy"}
    now = dws.patch("workflows", "fluxjob-972", {"status": still})

    fire(store, 972, "tc_timeout")

    note = "DWS/Rabbit interactions failed: workflow in 'TransientCondition' state too long: "
    assert [e["note"] for e in exceptions(store, 972)] == [note + "still busy"]
    record = store.jobs.get(972)
    assert record is not None
    assert record.observed_rv == now["metadata"]["resourceVersion"]

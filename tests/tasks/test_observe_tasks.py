"""dws.observe re-reads and records the Workflow state; storage.observe records rabbit health."""

from __future__ import annotations

import json

import redis
from celery import Celery
from coral2_sim.kube.api import KubeApiServer
from kubernetes import client

from pipeline.clients.k8s import DwsClient
from pipeline.model.workflow import jobid_of_workflow as jobid_of
from pipeline.platform.sending import settings_of
from pipeline.store import JobRecord, Keys, Store
from pipeline.tasks.observe import observe, observe_storage
from tests.platform.results import result_of


def store_of(app: Celery) -> Store:
    return Store(
        redis.Redis.from_url(app.conf.broker_url),
        Keys(settings_of(app).pipeline.key_prefix),
    )


def dws_of(server: KubeApiServer) -> DwsClient:
    return DwsClient(client.ApiClient(client.Configuration(host=server.url)))


def test_only_flux_workflow_names_have_a_jobid() -> None:
    assert jobid_of("fluxjob-123") == 123
    assert jobid_of("slurm-123") is None
    assert jobid_of("fluxjob-12a") is None


def test_observe_records_the_state_it_reads_not_the_event(
    celery_app: Celery, worker: None, kube_api: KubeApiServer
) -> None:
    dws = dws_of(kube_api)
    dws.create_workflow({"metadata": {"name": "fluxjob-601"}, "spec": {"desiredState": "Proposal"}})
    dws.patch(
        "workflows",
        "fluxjob-601",
        {"status": {"state": "Proposal", "ready": True, "status": "Completed"}},
    )
    store = store_of(celery_app)
    store.client.set(store.keys.observe_pending(601), "1")
    assert result_of(observe, jobid=601) == "Proposal:ready"
    record = store.jobs.get(601)
    assert record is not None
    assert (record.workflow, record.state) == ("fluxjob-601", "Proposal:ready")
    assert store.client.get(store.keys.observe_pending(601)) is None


def test_observing_a_deleted_workflow_marks_the_job(celery_app: Celery, worker: None) -> None:
    store = store_of(celery_app)
    store.jobs.create(JobRecord(jobid=602))
    assert result_of(observe, jobid=602) is None
    record = store.jobs.get(602)
    assert record is not None
    assert record.state == "deleted"


def test_storage_observe_records_rabbit_health(
    celery_app: Celery, worker: None, kube_api: KubeApiServer
) -> None:
    dws = dws_of(kube_api)
    dws.create("storages", {"metadata": {"name": "rabbit-h"}, "spec": {"state": "Enabled"}})
    status = {
        "status": "Ready",
        "access": {
            "computes": [{"name": "c1", "status": "Ready"}, {"name": "c2", "status": "Offline"}]
        },
    }
    dws.patch("storages", "rabbit-h", {"status": status}, status=True)
    health = result_of(observe_storage, name="rabbit-h")
    assert health == {"status": "Ready", "state": "Enabled", "not_ready": ["c2"]}
    store = store_of(celery_app)
    assert json.loads(store.client.hget(store.keys.rabbits, "rabbit-h") or "{}") == health

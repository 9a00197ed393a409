"""dws.observe acts on the state it reads: Setup complete → Computes, DataIn, timing — once."""

from __future__ import annotations

import redis
from celery import Celery
from coral2_sim.kube.api import KubeApiServer
from kubernetes import client

from pipeline.clients.k8s import DwsClient
from pipeline.platform.sending import settings_of
from pipeline.store import JobRecord, Keys, Store
from pipeline.tasks.observe import observe
from tests.platform.results import result_of


def test_a_complete_setup_is_acted_on_once_however_often_it_is_observed(
    celery_app: Celery, worker: None, kube_api: KubeApiServer
) -> None:
    dws = DwsClient(client.ApiClient(client.Configuration(host=kube_api.url)))
    store = Store(
        redis.Redis.from_url(celery_app.conf.broker_url),
        Keys(settings_of(celery_app).pipeline.key_prefix),
    )
    dws.create_workflow({"metadata": {"name": "fluxjob-801"}, "spec": {"desiredState": "Setup"}})
    dws.patch(
        "workflows",
        "fluxjob-801",
        {
            "status": {
                "state": "Setup",
                "ready": True,
                "status": "Completed",
                "elapsedTimeLastState": "2s",
            }
        },
    )
    dws.create("computes", {"metadata": {"name": "fluxjob-801"}, "data": []})
    store.jobs.create(JobRecord(jobid=801, hosts=["c1", "c2", "c3"], failed_nodes=["c2"]))
    backlog = store.outbox.backlog()
    for _ in range(3):
        result_of(observe, jobid=801)
    assert dws.get_workflow("fluxjob-801")["spec"]["desiredState"] == "DataIn"
    assert dws.get("computes", "fluxjob-801")["data"] == [{"name": "c1"}, {"name": "c3"}]
    assert store.outbox.backlog() == backlog + 1
    assert store.marks.is_set(801, "kvs:rabbit_setup_timing")

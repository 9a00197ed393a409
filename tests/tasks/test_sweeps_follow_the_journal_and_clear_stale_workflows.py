"""systemstatus.sync patches SystemStatus from the resource journal (a host our drain
disabled is Enabled again by its undrain); housekeeping.stale_sweep tears down and deletes
a fluxjob-* Workflow whose job Flux finished, and leaves a running job's alone."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from coral2_sim.dws.fixtures import install_cluster
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.errors import NotFound
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.model.workflow import WLM_FINALIZER
from pipeline.store import JobRecord
from tests.tasks.eager_app import TiB, eager_app, store_of_app


@pytest.fixture
def app(tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient]) -> Celery:
    app = eager_app(tmp_path, redis_url, kube[0].url, CORAL2_PIPELINE_PIPELINE__STALE_AFTER="1")
    install_cluster(kube[1], RabbitMapping.build({"rabbit1": (64 * TiB, ["c1", "c2"])}))
    return app


def run(app: Celery, task: str, **kwargs: Any) -> Any:
    return app.tasks[task].apply(kwargs=kwargs).get()


def nodes(dws: DwsClient) -> dict[str, str]:
    return dict(dws.get("systemstatuses", "default")["data"]["nodes"])


def test_systemstatus_follows_online_offline_and_our_drains(
    app: Celery, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    store, dws = store_of_app(app), kube[1]
    log = store.resource_log
    log.post(
        {
            "timestamp": 1.0,
            "name": "restart",
            "context": {"ranks": "0-1", "online": "", "nodelist": "c[1-2]"},
        },
        {"timestamp": 1.0, "name": "online", "context": {"idset": "0-1"}},
    )
    run(app, "systemstatus.sync")
    assert nodes(dws) == {"c1": "Enabled", "c2": "Enabled"}
    store.systemstatus.disable(["c2"])  # what a drain for unmount failures does
    log.post({"timestamp": 2.0, "name": "offline", "context": {"idset": "0"}})
    run(app, "systemstatus.sync")
    assert nodes(dws) == {"c1": "Disabled", "c2": "Disabled"}
    run(app, "systemstatus.sync")  # nothing new: the same
    log.post(
        {"timestamp": 3.0, "name": "online", "context": {"idset": "0"}},
        {"timestamp": 3.0, "name": "undrain", "context": {"idset": "1", "nodelist": "c2"}},
    )
    run(app, "systemstatus.sync")
    assert nodes(dws) == {"c1": "Enabled", "c2": "Enabled"}
    assert store.systemstatus.disabled() == set()


def test_a_workflow_of_a_finished_job_is_torn_down_then_deleted(
    app: Celery, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    store, dws = store_of_app(app), kube[1]
    for jobid in (71, 72):
        meta = {"name": f"fluxjob-{jobid}", "finalizers": [WLM_FINALIZER]}
        dws.create_workflow({"metadata": meta, "spec": {"desiredState": "Proposal"}})
        store.jobs.create(JobRecord(jobid=jobid, userid=1001, workflow=f"fluxjob-{jobid}"))
    store.flux_jobs.synced([71, 72], time.time())
    store.flux_jobs.inactive(71, time.time() - 5)  # ended 5 s ago; stale after 1 s
    counts = run(app, "housekeeping.stale_sweep")
    assert (counts["teardown"], counts["keep"]) == (1, 1)
    assert dws.get_workflow("fluxjob-71")["spec"]["desiredState"] == "Teardown"
    assert dws.get_workflow("fluxjob-72")["spec"]["desiredState"] == "Proposal"
    dws.patch("workflows", "fluxjob-71", {"status": {"state": "Teardown", "ready": True}})
    assert run(app, "housekeeping.stale_sweep")["delete"] == 1
    with pytest.raises(NotFound):
        dws.get_workflow("fluxjob-71")
    assert 71 not in store.jobs.jobids()  # its record ends (expires after the retention)
    assert 72 in store.jobs.jobids()

"""A partial epilog success: when PostRun's unmounts time out, the computes that kept their
mounts are drained, the epilog is released at once for the rest, and the job's rabbit is
held (its ssds down in Flux) until Teardown completes; then its ssds come back up. With
``pipeline.partial_epilog`` off the whole job waits for Teardown, as flux-coral2's does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from celery import Celery
from coral2_sim.dws.fixtures import install_cluster, set_rabbit_status
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.model.job import Epilog
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.perform import deadlines as arming
from pipeline.store import JobRecord, Store
from pipeline.tasks import timeouts
from tests.tasks.clientmounts import clientmount
from tests.tasks.eager_app import TiB, eager_app, store_of_app

JOBID = 941
WORKFLOW = f"fluxjob-{JOBID}"


def told(store: Store) -> list[tuple[str, Any]]:
    """Each message to Flux since the rabbit's ssds first came up, in order."""
    entries: Any = store.client.xrange(store.keys.outbox)
    messages = [(f[b"kind"].decode(), json.loads(f[b"payload"])) for _, f in entries]
    return [
        (kind, payload.get("status") or payload.get("targets") or payload.get("id"))
        for kind, payload in messages[2:]
        if kind != "exception" and not kind.startswith("kvs")
    ]


def job_in_postrun(
    tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient], **env: str
) -> tuple[Celery, Store]:
    app = eager_app(
        tmp_path, redis_url, kube[0].url, CORAL2_PIPELINE_PIPELINE__CHUNKS_PER_NNF="2", **env
    )
    dws = kube[1]
    install_cluster(dws, RabbitMapping.build({"rabbit1": (64 * TiB, ["c1", "c2"])}))
    set_rabbit_status(dws, "rabbit1", "Ready")
    store = store_of_app(app)
    app.tasks["storage.observe"].apply(kwargs={"name": "rabbit1"}).get()
    dws.create_workflow({"metadata": {"name": WORKFLOW}, "spec": {"desiredState": "PostRun"}})
    dws.patch("workflows", WORKFLOW, {"status": {"state": "PostRun", "ready": False}})
    record = JobRecord(jobid=JOBID, hosts=["c1", "c2"], rabbits=["rabbit1"], workflow=WORKFLOW)
    store.jobs.create(record)
    clientmount(dws, WORKFLOW, "c1", "unmounted")
    clientmount(dws, WORKFLOW, "c2", "mounted")
    arming.arm(store, JOBID, "postrun_timeout", 0.0, "t")
    fire = {"jobid": JOBID, "kind": "postrun_timeout", "token": "t", "due": 0.0}
    assert app.tasks[timeouts.FIRE].apply(kwargs=fire).get() is True
    return app, store


def complete_teardown(app: Celery, dws: DwsClient) -> None:
    status = {"state": "Teardown", "ready": True, "status": "Completed"}
    dws.patch("workflows", WORKFLOW, {"status": status})
    app.tasks["dws.observe"].apply(kwargs={"jobid": JOBID}).get()


def test_the_rest_is_released_at_once_and_the_rabbit_held_until_teardown(
    tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    app, store = job_in_postrun(tmp_path, redis_url, kube)
    assert told(store) == [
        ("drain", "c2"),  # ahead of the release: c2 can take no job
        ("set-status", "down"),
        ("set-status", "down"),
        ("epilog-remove", JOBID),
    ]
    record = store.jobs.get(JOBID)
    assert record is not None and record.epilog == Epilog.EARLY

    app.tasks["storage.resync"].apply().get()  # the Storage is Ready: the hold wins
    assert len(told(store)) == 4

    complete_teardown(app, kube[1])
    assert told(store)[4:] == [("set-status", "up"), ("set-status", "up")]


def test_without_partial_epilogs_the_job_waits_for_teardown(
    tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    app, store = job_in_postrun(
        tmp_path, redis_url, kube, CORAL2_PIPELINE_PIPELINE__PARTIAL_EPILOG="false"
    )
    assert told(store) == [("drain", "c2")]
    complete_teardown(app, kube[1])
    assert told(store)[1:] == [("epilog-remove", JOBID)]

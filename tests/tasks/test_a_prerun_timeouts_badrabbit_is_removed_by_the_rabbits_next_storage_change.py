"""A PreRun timeout within the job's tolerance gives the compute whose mounts did not come up
``badrabbit``; the periodic Storage pass over the unchanged Storage keeps it, and the
rabbit's next Storage change removes it (nothing is left stale in the scheduler)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coral2_sim.dws.fixtures import install_cluster, set_rabbit_status
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.perform import deadlines as arming
from pipeline.store import JobRecord, Store
from pipeline.tasks import timeouts
from tests.tasks.clientmounts import clientmount
from tests.tasks.eager_app import TiB, eager_app, store_of_app

JOBID = 931
WORKFLOW = f"fluxjob-{JOBID}"


def properties(store: Store) -> list[tuple[str, dict[str, Any]]]:
    entries: Any = store.client.xrange(store.keys.outbox)
    told = [(f[b"kind"].decode(), json.loads(f[b"payload"])) for _, f in entries]
    return [(kind, payload) for kind, payload in told if kind.endswith("-property")]


def test_the_property_lasts_until_the_storage_changes(
    tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    app = eager_app(tmp_path, redis_url, kube[0].url)
    dws = kube[1]
    install_cluster(dws, RabbitMapping.build({"rabbit1": (64 * TiB, ["c1", "c2"])}))
    set_rabbit_status(dws, "rabbit1", "Ready")
    store = store_of_app(app)
    app.tasks["storage.observe"].apply(kwargs={"name": "rabbit1"}).get()
    dws.create_workflow({"metadata": {"name": WORKFLOW}, "spec": {"desiredState": "PreRun"}})
    dws.patch("workflows", WORKFLOW, {"status": {"state": "PreRun", "ready": False}})
    store.jobs.create(JobRecord(jobid=JOBID, failure_tolerance=1, hosts=["c1", "c2"]))
    clientmount(dws, WORKFLOW, "c1", "mounted")
    clientmount(dws, WORKFLOW, "c2", "unmounted")

    arming.arm(store, JOBID, "prerun_timeout", 0.0, "t")
    fire = {"jobid": JOBID, "kind": "prerun_timeout", "token": "t", "due": 0.0}
    assert app.tasks[timeouts.FIRE].apply(kwargs=fire).get() is True
    assert properties(store) == [
        ("set-property", {"targets": "c2", "key": "badrabbit", "value": "bad"})
    ]

    app.tasks["storage.resync"].apply().get()
    assert len(properties(store)) == 1  # the same Storage: the property stays

    set_rabbit_status(dws, "rabbit1", "Ready", message="checked")  # a new resourceVersion
    app.tasks["storage.observe"].apply(kwargs={"name": "rabbit1"}).get()
    assert properties(store)[1:] == [("remove-property", {"targets": "c2", "key": "badrabbit"})]

"""dws.setup fills Servers from the DirectiveBreakdowns' storage the Proposal observe saved
in the job record, and moves the Workflow to Setup without reading it or its breakdowns
(only the Storages of its rabbits, for their topology); a record without it is served by
reading them, and a duplicate changes nothing; nor does one that comes after the job's
CLEANUP began (its Teardown is coming: a Setup would let PreRun make ClientMounts no
epilog unmounts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery
from coral2_sim.dws.fixtures import install_cluster
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.platform.app import create_app
from pipeline.platform.sending import settings_of
from pipeline.settings import load_settings
from pipeline.store import JobRecord, Keys, Store
from tests.conftest import make_r

TiB = 2**40


def storage(servers: str) -> dict[str, Any]:
    """A DirectiveBreakdown's storage: the Servers ``servers`` and one xfs allocation set."""
    return {
        "reference": {"kind": "Servers", "name": servers, "namespace": "default"},
        "allocationSets": [
            {
                "label": "xfs",
                "allocationStrategy": "AllocatePerCompute",
                "minimumCapacity": 10 * 2**30,
                "constraints": {},
            }
        ],
    }


@pytest.fixture
def app(tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient]) -> Celery:
    mapping = RabbitMapping.build({"rabbit1": (64 * TiB, ["c1", "c2"])})
    (tmp_path / "mapping.json").write_text(mapping.model_dump_json())
    server, dws = kube
    install_cluster(dws, mapping)  # the Storages agree with the mapping
    settings = load_settings(
        env={
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_url,
            "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "setuptest",
            "CORAL2_PIPELINE_PIPELINE__API_HOST": server.url,
            "CORAL2_PIPELINE_RABBIT__MAPPING": str(tmp_path / "mapping.json"),
        }
    )
    return create_app(settings, set_current=False)  # the session worker keeps its own app


def store_of(app: Celery) -> Store:
    return Store(
        redis.Redis.from_url(app.conf.broker_url),
        Keys(settings_of(app).pipeline.key_prefix),
    )


def proposal_done(dws: DwsClient, jobid: int, *, breakdown: bool) -> dict[str, Any]:
    """A Workflow at Proposal (complete), its Servers, and with ``breakdown`` its
    DirectiveBreakdown; return the storage its breakdown describes."""
    name = f"fluxjob-{jobid}"
    described = storage(f"{name}-0")
    dws.create_workflow({"metadata": {"name": name}, "spec": {"desiredState": "Proposal"}})
    dws.create("servers", {"metadata": {"name": f"{name}-0"}, "spec": {}})
    if breakdown:
        dws.create("directivebreakdowns", {"metadata": {"name": f"{name}-0"}, "spec": {}})
        status = {"storage": described}
        dws.patch("directivebreakdowns", f"{name}-0", {"status": status}, status=True)
    status = {
        "state": "Proposal",
        "ready": True,
        "status": "Completed",
        "directiveBreakdowns": [{"name": f"{name}-0", "namespace": "default"}],
    }
    dws.patch("workflows", name, {"status": status})
    return described


def recorded_at_proposal(dws: DwsClient, store: Store, jobid: int) -> None:
    """A job whose Workflow is at Proposal (complete) and whose record holds the storage
    the Proposal observe saved."""
    described = proposal_done(dws, jobid, breakdown=False)
    store.jobs.create(JobRecord(jobid=jobid, workflow=f"fluxjob-{jobid}", storages=[described]))


def run_setup(app: Celery, jobid: int) -> Any:
    return app.tasks["dws.setup"].apply(kwargs={"jobid": jobid, "R": make_r("c[1-2]")}).get()


def exceptions(store: Store, jobid: int) -> list[dict[str, Any]]:
    entries: Any = store.client.xrange(store.keys.outbox)
    payloads = [json.loads(f[b"payload"]) for _, f in entries if f[b"kind"] == b"exception"]
    return [p for p in payloads if p["id"] == jobid]


def test_setup_reads_neither_the_workflow_nor_its_breakdowns_when_the_record_has_them(
    app: Celery, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    server, dws = kube
    store = store_of(app)
    # a first job: the process's client probes the served DWS version (reads) once
    recorded_at_proposal(dws, store, 60)
    assert run_setup(app, 60) is True
    described = proposal_done(dws, 61, breakdown=False)  # reading the breakdown would fail
    store.jobs.create(JobRecord(jobid=61, workflow="fluxjob-61", storages=[described]))
    for plural in ("/workflows/", "/directivebreakdowns/"):  # a read would take one
        server.inject(code=500, method="GET", times=50, path=plural)
    assert run_setup(app, 61) is True
    assert len(server.routes.faults) == 100  # neither was read
    server.routes.faults.clear()
    servers = dws.get("servers", "fluxjob-61-0")
    assert [s["label"] for s in servers["spec"]["allocationSets"]] == ["xfs"]
    assert dws.get_workflow("fluxjob-61")["spec"]["desiredState"] == "Setup"
    assert exceptions(store, 61) == []


def test_a_record_without_them_is_served_by_reading_the_breakdowns(
    app: Celery, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    _, dws = kube
    store = store_of(app)
    proposal_done(dws, 62, breakdown=True)
    store.jobs.create(JobRecord(jobid=62, workflow="fluxjob-62"))  # as an older release left it
    assert run_setup(app, 62) is True
    assert [s["label"] for s in dws.get("servers", "fluxjob-62-0")["spec"]["allocationSets"]] == [
        "xfs"
    ]
    assert dws.get_workflow("fluxjob-62")["spec"]["desiredState"] == "Setup"


def test_a_duplicate_setup_after_the_workflow_moved_on_changes_nothing(
    app: Celery, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    _, dws = kube
    store = store_of(app)
    recorded_at_proposal(dws, store, 63)
    assert run_setup(app, 63) is True
    dws.patch("workflows", "fluxjob-63", {"status": {"state": "Setup", "ready": True}})
    dws.patch("workflows", "fluxjob-63", {"spec": {"desiredState": "DataIn"}})
    before = dws.get_workflow("fluxjob-63")["metadata"]["resourceVersion"]
    assert run_setup(app, 63) is True
    after = dws.get_workflow("fluxjob-63")
    assert (after["spec"]["desiredState"], after["metadata"]["resourceVersion"]) == (
        "DataIn",
        before,
    )
    assert exceptions(store, 63) == []


def test_setup_of_a_workflow_that_is_gone_fails_the_job_as_flux_coral2_does(
    app: Celery, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    store = store_of(app)
    store.jobs.create(
        JobRecord(jobid=64, workflow="fluxjob-64", storages=[storage("fluxjob-64-0")])
    )
    assert run_setup(app, 64) is False
    [raised] = exceptions(store, 64)
    assert raised["type"] == "dws-setup"
    assert "workflow fluxjob-64 does not exist" in raised["note"]


def test_a_setup_after_the_jobs_cleanup_began_changes_nothing(
    app: Celery, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    _, dws = kube
    store = store_of(app)
    recorded_at_proposal(dws, store, 64)
    app.tasks["job.cleanup"].apply(kwargs={"jobid": 64}).get()
    assert run_setup(app, 64) is False
    assert dws.get_workflow("fluxjob-64")["spec"]["desiredState"] == "Proposal"
    assert dws.get("servers", "fluxjob-64-0")["spec"] == {}

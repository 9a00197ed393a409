"""dws.setup checks the job's computes against the Storage of the rabbit the rabbitmapping
puts each behind: nnf hands a rabbit's allocations to the computes its Storage lists, so
a compute the mapping misplaces would run on a directory nothing is mounted on. The job
is refused with one line naming the compute and both rabbits, before any Servers is
filled or the Workflow moves; storage on no rabbit's computes (lustre) is not checked."""

from __future__ import annotations

from typing import Any

from celery import Celery
from coral2_sim.dws.fixtures import move_compute, storage_object, storage_status
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.store import JobRecord
from tests.tasks.test_setup_fills_servers_from_what_the_proposal_observe_saved import (
    TiB,
    app,
    exceptions,
    proposal_done,
    run_setup,
    store_of,
)

__all__ = ["app"]  # the fixture, shared


def another_rabbit(dws: DwsClient, name: str) -> None:
    """A rabbit the job's rabbitmapping does not know, its Storage listing no compute."""
    dws.create("storages", storage_object(name))
    dws.patch("storages", name, {"status": storage_status(name, 64 * TiB, [])}, status=True)


def set_up(app: Celery, dws: DwsClient, jobid: int, storage: dict[str, Any] | None = None) -> Any:
    described = proposal_done(dws, jobid, breakdown=False)
    store_of(app).jobs.create(
        JobRecord(jobid=jobid, workflow=f"fluxjob-{jobid}", storages=[storage or described])
    )
    return run_setup(app, jobid)


def test_a_compute_another_rabbits_storage_lists_fails_the_job_naming_both_rabbits(
    app: Celery, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    _, dws = kube
    another_rabbit(dws, "rabbit9")
    move_compute(dws, "c2", "rabbit9")
    set_up(app, dws, 70)
    [raised] = exceptions(store_of(app), 70)
    assert raised["type"] == "dws-setup" and raised["severity"] == 0
    assert raised["note"] == (
        "DWS workflow interactions failed: compute c2 is behind rabbit9 by that rabbit's "
        "Storage (status.access.computes) but behind rabbit1 by the rabbitmapping, so nnf "
        "would mount it nothing; rebuild the rabbitmapping (coral2-pipeline rabbitmapping "
        "--from-storages) and restart the workers"
    )
    assert dws.get_workflow("fluxjob-70")["spec"]["desiredState"] == "Proposal"
    assert dws.get("servers", "fluxjob-70-0")["spec"] == {}


def test_a_compute_no_storage_lists_fails_the_job(
    app: Celery, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    _, dws = kube
    move_compute(dws, "c1", "nowhere")
    set_up(app, dws, 71)
    [raised] = exceptions(store_of(app), 71)
    assert "compute c1 is listed in no rabbit's Storage" in raised["note"]
    assert "behind rabbit1 by the rabbitmapping" in raised["note"]
    assert dws.get_workflow("fluxjob-71")["spec"]["desiredState"] == "Proposal"


def test_lustre_is_not_held_to_the_topology(
    app: Celery, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    _, dws = kube
    move_compute(dws, "c1", "nowhere")
    lustre = {
        "reference": {"kind": "Servers", "name": "fluxjob-72-0", "namespace": "default"},
        "allocationSets": [
            {
                "label": "ost",
                "allocationStrategy": "AllocateAcrossServers",
                "minimumCapacity": 10 * 2**30,
                "constraints": {},
            }
        ],
    }
    assert set_up(app, dws, 72, lustre) is True
    assert exceptions(store_of(app), 72) == []
    assert dws.get_workflow("fluxjob-72")["spec"]["desiredState"] == "Setup"

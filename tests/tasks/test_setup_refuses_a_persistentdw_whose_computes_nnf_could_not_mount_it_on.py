"""dws.setup checks a persistentdw's rabbit-local instance (xfs, gfs2, raw) against the
job's computes: nnf gives each rabbit's allocations of it one each to the computes behind
that rabbit, so a compute behind a rabbit holding none would run on a directory nothing is
mounted on, and more computes behind a rabbit than its allocations fail PreRun ("Too many
clients for storage"). Either way the job is refused at once, naming the instance, the
compute or the rabbit, before the Workflow moves; lustre, mounted everywhere, goes on."""

from __future__ import annotations

from celery import Celery
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.states.persistent import PersistentPlacement, persistent_placement
from pipeline.store import JobRecord
from tests.tasks.eager_app import TiB
from tests.tasks.test_setup_fills_servers_from_what_the_proposal_observe_saved import (
    app,
    exceptions,
    proposal_done,
    run_setup,
    store_of,
)

__all__ = ["app"]  # the fixture, shared


def instance(dws: DwsClient, name: str, fs_type: str, held: dict[str, int]) -> None:
    """Persistent instance ``name`` of ``fs_type``, its Servers holding ``held``."""
    dws.create(
        "persistentstorageinstances",
        {"metadata": {"name": name}, "spec": {"fsType": fs_type, "userID": 1001}},
    )
    storage = [{"name": rabbit, "allocationCount": n} for rabbit, n in held.items()]
    sets = [{"label": fs_type, "allocationSize": 2**30, "storage": storage}]
    dws.create("servers", {"metadata": {"name": name}, "spec": {"allocationSets": sets}})


def set_up(app: Celery, dws: DwsClient, jobid: int, name: str) -> object:
    described = proposal_done(dws, jobid, breakdown=False)
    record = JobRecord(
        jobid=jobid, workflow=f"fluxjob-{jobid}", storages=[described], persistent=[name]
    )
    store_of(app).jobs.create(record)
    return run_setup(app, jobid)  # computes c1 and c2, behind rabbit1


def test_more_computes_than_its_allocations_behind_a_rabbit_fail_the_job(
    app: Celery, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    _, dws = kube
    instance(dws, "one", "xfs", {"rabbit1": 1})
    set_up(app, dws, 80, "one")
    [raised] = exceptions(store_of(app), 80)
    assert raised["type"] == "dws-setup"
    assert raised["note"] == (
        "DWS workflow interactions failed: #DW persistentdw name=one: 2 of the job's computes "
        "are behind rabbit1, which holds 1 allocation(s) of its xfs storage, one a compute "
        "(nnf would fail PreRun: Too many clients for storage): run at most 1 there"
    )
    assert dws.get_workflow("fluxjob-80")["spec"]["desiredState"] == "Proposal"


def test_computes_behind_a_rabbit_holding_none_fail_the_job(
    app: Celery, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    _, dws = kube
    instance(dws, "elsewhere", "gfs2", {"rabbit9": 4})
    set_up(app, dws, 81, "elsewhere")
    [raised] = exceptions(store_of(app), 81)
    assert (
        "#DW persistentdw name=elsewhere: its gfs2 storage is on rabbit9 (4) alone"
        in (raised["note"])
    )
    assert "compute c1 is behind rabbit1, where it would get no storage" in raised["note"]


def test_an_instance_that_fits_goes_on(app: Celery, kube: tuple[KubeApiServer, DwsClient]) -> None:
    _, dws = kube
    instance(dws, "fits", "raw", {"rabbit1": 2})
    assert set_up(app, dws, 82, "fits") is True
    assert exceptions(store_of(app), 82) == []


def test_lustre_is_mounted_wherever_the_computes_are() -> None:
    mapping = RabbitMapping.build({"rabbit1": (64 * TiB, ["c1", "c2"])})
    lustre = PersistentPlacement("lustre", {"rabbit9": 1})
    assert persistent_placement("lus", lustre, ["c1", "c2"], mapping) is None

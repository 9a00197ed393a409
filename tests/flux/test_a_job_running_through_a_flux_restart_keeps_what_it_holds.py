"""A Flux restart with a job running (RFC 50): flux-core reattaches to the job, and the
pipeline keeps everything the job holds — its Workflow, its VNIs, the CXI services on its
nodes, its hardware-collective reservation — instead of failing it; once the job ends
after the restart, it is torn down as any other, and nothing is left."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from pipeline.clients.flux_site import FluxSite
from tests.flux.conftest import Tier, running_tier, signing_as

DW = "#DW jobdw type=xfs capacity=10GiB name=scratch"


def holdings(tier: Tier, jobid: int) -> dict[str, Any]:
    """What the job holds: its Workflow's state, its VNIs, its CXI services by node, its
    hardware-collective reservation."""
    assert tier.system.dws is not None
    record = tier.store.jobs.get(jobid)
    assert record is not None and record.slingshot is not None
    workflow = tier.system.dws.get_workflow(f"fluxjob-{jobid}")
    nics = tier.system.workdir / "mnt" / ".state" / "nics"
    services = {}
    for host in record.slingshot.nodes:
        devices = json.loads((nics / f"{host}.json").read_text())
        services[host] = sorted(
            s["id"]
            for device in devices.values()
            for s in device["services"]
            if s["vnis"] == record.slingshot.vnis
        )
    return {
        "workflow": (workflow["spec"]["desiredState"], workflow["status"]["state"]),
        "vnis": record.slingshot.vnis,
        "reserved": tier.store.vnipool.query()["jobs"].get(str(jobid)),
        "services": services,
        "hwcoll": None if record.hwcoll is None else record.hwcoll.model_dump(),
    }


@pytest.fixture(scope="module")
def restartable_module(
    flux_site: FluxSite, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Tier]:
    """The whole system around a real Flux that keeps its jobs across a restart."""
    workdir = tmp_path_factory.mktemp("restart-tier")
    with running_tier(flux_site, workdir, statedir=workdir / "flux-statedir") as tier:
        yield tier


@pytest.fixture
def restartable(restartable_module: Tier) -> Tier:
    return signing_as(restartable_module)


def submit_running(tier: Tier, *options: str) -> int:
    """A #DW job of two nodes that runs (testexec) for an hour unless told otherwise; its
    id, once it started."""
    jobid = tier.submit(
        "-N2",
        f"--setattr=system.dw={DW}",
        "--setattr=system.exec.test.run_duration=1h",
        "--flags=debug",  # flux-core posts its reattach events
        *options,
        "true",
    )
    tier.flux.flux("job", "wait-event", "-t", "120", str(jobid), "start", timeout=130)
    return jobid


def test_a_running_dw_job_keeps_its_workflow_vnis_services_and_collectives(
    restartable: Tier,
) -> None:
    tier = restartable
    jobid = submit_running(tier)
    before = holdings(tier, jobid)
    assert before["workflow"] == ("PreRun", "PreRun"), before
    assert before["services"] and all(before["services"].values()), before

    tier.flux.restart()

    assert "debug.exec-reattach-finish" in tier.names(jobid)
    assert tier.flux.flux("jobs", "-no", "{state}", str(jobid)).strip() == "RUN"
    assert holdings(tier, jobid) == before

    tier.flux.flux("cancel", str(jobid))
    tier.wait_inactive(jobid)
    assert tier.settled(120) == []


def kvs_keys(tier: Tier, jobid: int) -> set[str]:
    directory = tier.flux.flux("job", "id", "--to=kvs", str(jobid)).strip()
    return set(tier.flux.flux("kvs", "ls", "-1", directory).split())


def test_a_job_that_ended_before_the_bridge_was_back_still_moves_its_data_out(
    restartable: Tier,
) -> None:
    tier = restartable
    # testexec: the job is found finished when flux-core reattaches to it, before the
    # bridge serves dws again
    jobid = submit_running(tier, "--setattr=system.exec.test.reattach_finish=1")

    tier.flux.restart()

    tier.wait_inactive(jobid)
    finish = next(e for e in tier.events(jobid) if e["name"] == "finish")
    assert finish["context"]["status"] == 0
    # dws-jobtap found nothing serving dws.post_run and gave its epilog up, as it does
    # under flux-coral2 ...
    [lost] = [e["context"] for e in tier.events(jobid) if e["name"] == "exception"]
    assert (lost["type"], lost["severity"]) == ("dws-epilog", 0)
    assert lost["note"] == "DWS workflow interactions failed: Failed to send dws.post_run RPC"
    # ... but the pipeline read that from the job's eventlog, and took its Workflow on
    # through PostRun and DataOut to Teardown, as dws.post_run would have
    assert tier.settled(120) == []
    timings = {"rabbit_postrun_timing", "rabbit_dataout_timing", "rabbit_teardown_timing"}
    assert timings <= kvs_keys(tier, jobid)


def test_a_job_flux_cannot_reattach_to_ends_and_leaves_nothing(restartable: Tier) -> None:
    tier = restartable
    # real job shells: they do not outlive their brokers here, and flux-core 0.88's
    # bulk-exec cannot reattach to them anyway: the job fails
    jobid = tier.submit("-N2", f"--setattr=system.dw={DW}", "--input=/dev/null", "sleep", "300")
    tier.flux.flux("job", "wait-event", "-t", "120", str(jobid), "start", timeout=130)

    tier.flux.restart()

    tier.wait_inactive(jobid)
    fatal = [e["context"] for e in tier.events(jobid) if e["name"] == "exception"]
    assert fatal and fatal[0]["severity"] == 0, fatal
    assert tier.settled(120) == []

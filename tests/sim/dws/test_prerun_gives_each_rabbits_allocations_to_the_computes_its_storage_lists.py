"""In PreRun the simulated nnf hands each rabbit's allocations to the computes that rabbit's
Storage lists, one each, as nnf-sos's access controller does: a compute the rabbitmapping
put behind the wrong rabbit gets a ClientMount with no mounts, and a rabbit whose Storage
lists more of the job's computes than it holds allocations fails PreRun with nnf's words."""

from __future__ import annotations

from coral2_sim.dws.fixtures import move_compute
from coral2_sim.dws.nnf_mounts import TOO_MANY_CLIENTS

from tests.sim.dws.conftest import DwsSide
from tests.sim.dws.wlm_helpers import advance, fill_servers, wait_state, workflow


def to_prerun(side: DwsSide, jobid: int, hosts: list[str], directive: str) -> str:
    """A job on ``hosts`` with Servers filled from the rabbitmapping, asked for PreRun."""
    dws, name = side.dws, f"fluxjob-{jobid}"
    dws.create_workflow(workflow(jobid, [directive]))
    fill_servers(dws, wait_state(dws, name, "Proposal"), side.mapping, hosts)
    advance(dws, name, "Setup")
    dws.patch_computes(name, [{"name": h} for h in hosts])
    advance(dws, name, "DataIn")
    dws.patch_desired_state(name, "PreRun", expected_state="DataIn")
    return name


def mounts_by_compute(side: DwsSide, name: str) -> dict[str, int]:
    mounts = side.dws.client_mounts(name)
    return {
        m["spec"]["node"]: len(m["spec"]["mounts"])
        for m in mounts
        if m["metadata"]["name"].endswith("-computes")
    }


def test_each_compute_its_rabbits_storage_lists_mounts_one_allocation(dws_side: DwsSide) -> None:
    hosts = ["compute01", "compute02", "compute17"]  # behind rabbit1, rabbit1, rabbit2
    name = to_prerun(dws_side, 81, hosts, "#DW jobdw type=xfs capacity=10GiB name=scratch")
    wait_state(dws_side.dws, name, "PreRun")
    assert mounts_by_compute(dws_side, name) == dict.fromkeys(hosts, 1)


def test_a_compute_behind_another_rabbit_than_the_mapping_says_gets_no_mount(
    dws_side: DwsSide,
) -> None:
    hosts = ["compute03", "compute04"]  # the mapping: both behind rabbit1
    move_compute(dws_side.dws, "compute04", "rabbit3")  # its Storage: rabbit3, which holds none
    name = to_prerun(dws_side, 82, hosts, "#DW jobdw type=xfs capacity=10GiB name=scratch")
    wait_state(dws_side.dws, name, "PreRun")
    assert mounts_by_compute(dws_side, name) == {"compute03": 1, "compute04": 0}


def test_a_rabbit_listing_more_of_the_jobs_computes_than_its_allocations_fails_prerun(
    dws_side: DwsSide,
) -> None:
    hosts = ["compute05", "compute33"]  # the mapping: one behind rabbit1, one behind rabbit3
    move_compute(dws_side.dws, "compute33", "rabbit1")  # rabbit1 lists both, holds one
    name = to_prerun(dws_side, 83, hosts, "#DW jobdw type=xfs capacity=10GiB name=scratch")
    status = wait_state(dws_side.dws, name, "PreRun", ready=False)["status"]
    assert status["status"] == "Error"
    assert status["message"] == f"DW Directive 0: WLM error: {TOO_MANY_CLIENTS}"


def test_lustre_is_mounted_by_every_compute_whatever_the_topology(dws_side: DwsSide) -> None:
    hosts = ["compute06", "compute07"]
    move_compute(dws_side.dws, "compute07", "rabbit3")
    name = to_prerun(dws_side, 84, hosts, "#DW jobdw type=lustre capacity=10GiB name=shared")
    wait_state(dws_side.dws, name, "PreRun")
    assert mounts_by_compute(dws_side, name) == dict.fromkeys(hosts, 1)


def test_an_error_whose_cause_is_mended_clears_as_the_controller_tries_again(
    dws_side: DwsSide,
) -> None:
    """controller-runtime retries a failed reconcile with backoff, and nnf resets the entry
    each pass: put the compute back behind its rabbit and the PreRun Error clears."""
    hosts = ["compute08", "compute34"]
    move_compute(dws_side.dws, "compute34", "rabbit1")
    name = to_prerun(dws_side, 85, hosts, "#DW jobdw type=xfs capacity=10GiB name=scratch")
    assert wait_state(dws_side.dws, name, "PreRun", ready=False)["status"]["status"] == "Error"
    move_compute(dws_side.dws, "compute34", "rabbit3")  # recabled back
    wait_state(dws_side.dws, name, "PreRun", timeout_s=30)
    assert mounts_by_compute(dws_side, name) == dict.fromkeys(hosts, 1)

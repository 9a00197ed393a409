"""nnf-sos gives each rabbit's LNet address one Lustre MGT (an NnfLustreMGT per file
system's MGT, looked up by address): a second file system whose MGT lands on a rabbit
that holds one fails its Setup Fatal, the Workflow saying "could not allocate storage"
and the driver's debug text naming the address ("multiple MGTs found for address"). An
MGT on another rabbit goes on; one freed by Teardown is free again."""

from __future__ import annotations

from tests.sim.dws.conftest import DwsSide
from tests.sim.dws.wlm_helpers import fill_servers, wait_state, workflow

LUSTRE = "#DW jobdw type=lustre capacity=100GiB name=lus"


def into_setup(side: DwsSide, jobid: int, hosts: list[str]) -> str:
    name = f"fluxjob-{jobid}"
    side.dws.create_workflow(workflow(jobid, [LUSTRE]))
    fill_servers(side.dws, wait_state(side.dws, name, "Proposal"), side.mapping, hosts)
    side.dws.patch_desired_state(name, "Setup", expected_state="Proposal")
    return name


def test_a_second_mgt_on_the_same_rabbit_fails_setup(dws_side: DwsSide) -> None:
    wait_state(dws_side.dws, into_setup(dws_side, 401, ["compute01", "compute02"]), "Setup")
    second = into_setup(dws_side, 402, ["compute03", "compute04"])  # behind rabbit1 too
    status = wait_state(dws_side.dws, second, "Setup", ready=False)["status"]
    assert status["status"] == "Error"
    assert status["message"] == "DW Directive 0: WLM error: could not allocate storage"
    [driver] = [d for d in status["drivers"] if d.get("status") == "Error"]
    assert "multiple MGTs found for address rabbit1@tcp" in driver["error"]


def test_an_mgt_on_another_rabbit_goes_on(dws_side: DwsSide) -> None:
    wait_state(dws_side.dws, into_setup(dws_side, 403, ["compute01"]), "Setup")
    wait_state(dws_side.dws, into_setup(dws_side, 404, ["compute17"]), "Setup")  # rabbit2


def test_an_mgt_freed_by_teardown_is_free_again(dws_side: DwsSide) -> None:
    first = into_setup(dws_side, 405, ["compute01"])
    wait_state(dws_side.dws, first, "Setup")
    dws_side.dws.patch_desired_state(first, "Teardown", expected_state="Setup")
    wait_state(dws_side.dws, first, "Teardown")
    wait_state(dws_side.dws, into_setup(dws_side, 406, ["compute02"]), "Setup")

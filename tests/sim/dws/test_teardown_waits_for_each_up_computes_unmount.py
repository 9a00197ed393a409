"""In Teardown the simulated nnf unmounts each compute's ClientMount and waits for it, as
nnf does, for as long as it takes: only a compute it sees as down (Disabled in
SystemStatus, Offline or Fenced in its Rabbit's Storage) has its ClientMount dropped
without an unmount. So a WLM that never tells nnf of a hung node waits in Teardown."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from coral2_sim.dws.fixtures import set_compute_access
from coral2_sim.dws.wlm import STATES

from pipeline.clients.k8s import DwsClient
from tests.sim.dws.conftest import DwsSide
from tests.sim.dws.wlm_helpers import advance, fill_servers, wait_state, workflow

HOSTS = ["compute01", "compute02", "compute03"]
HUNG = "compute02"
PENDING = "DW Directive 0: pending unmount"


def mounted_then_cancelled(side: DwsSide, jobid: int) -> str:
    """A gfs2 job mounted on every host, cancelled while it runs (PreRun → Teardown), with
    :data:`HUNG`'s unmount hanging; its Teardown waiting on that unmount."""
    dws, name = side.dws, f"fluxjob-{jobid}"
    dws.create_workflow(workflow(jobid, ["#DW jobdw type=gfs2 capacity=10GiB name=g1"]))
    fill_servers(dws, wait_state(dws, name, "Proposal"), side.mapping, HOSTS)
    advance(dws, name, "Setup")
    dws.patch_computes(name, [{"name": h} for h in HOSTS])
    for state in STATES[STATES.index("DataIn") : STATES.index("PreRun") + 1]:
        advance(dws, name, state)
    side.faults.never_unmount.add(HUNG)
    dws.patch_desired_state(name, "Teardown", expected_state="PreRun")
    deadline = time.monotonic() + 20
    while dws.get_workflow(name).get("status", {}).get("message") != PENDING:
        assert time.monotonic() < deadline, dws.get_workflow(name).get("status")
        time.sleep(0.01)
    return name


def waiting_on(dws: DwsClient, name: str) -> list[str]:
    return sorted(m["metadata"]["namespace"] for m in dws.client_mounts(name))


def disabled_in_systemstatus(dws: DwsClient) -> None:
    dws.patch_system_status({"data": {"nodes": {HUNG: "Disabled"}}})


def offline_in_storage(dws: DwsClient) -> None:
    set_compute_access(dws, "rabbit1", HUNG, "Offline")


def fenced_in_storage(dws: DwsClient) -> None:
    set_compute_access(dws, "rabbit1", HUNG, "Fenced")


def test_teardown_waits_on_a_hung_unmount_of_a_compute_that_is_up(dws_side: DwsSide) -> None:
    name = mounted_then_cancelled(dws_side, 71)
    assert dws_side.dws.get_workflow(name)["status"]["ready"] is False
    # the others unmounted and are gone; the hung one is asked to unmount and stays
    mounts = dws_side.dws.client_mounts(name)
    assert [m["metadata"]["namespace"] for m in mounts] == [HUNG]
    assert mounts[0]["spec"]["desiredState"] == "unmounted"


@pytest.mark.parametrize("down", [disabled_in_systemstatus, offline_in_storage, fenced_in_storage])
def test_teardown_drops_the_clientmount_of_a_compute_nnf_sees_as_down(
    dws_side: DwsSide, down: Callable[[DwsClient], None]
) -> None:
    name = mounted_then_cancelled(dws_side, 72)
    assert waiting_on(dws_side.dws, name) == [HUNG]
    down(dws_side.dws)
    wait_state(dws_side.dws, name, "Teardown")
    assert waiting_on(dws_side.dws, name) == []

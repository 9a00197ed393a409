"""A Workflow deleted while its computes hold its file systems goes only once they have
unmounted, as nnf's finalizer deletes the Workflow's children and waits for them: each
NnfAccess waits for its computes' unmounts (a compute that is down does not hold it)."""

from __future__ import annotations

import time

from pipeline.errors import NotFound
from tests.sim.dws.conftest import DwsSide
from tests.sim.dws.wlm_helpers import advance, fill_servers, wait_state, workflow

HOSTS = ["compute01", "compute02"]


def gone(side: DwsSide, name: str) -> bool:
    try:
        side.dws.get_workflow(name)
    except NotFound:
        return True
    return False


def test_the_deletion_waits_for_a_compute_that_has_not_unmounted(dws_side: DwsSide) -> None:
    dws, name = dws_side.dws, "fluxjob-60"
    dws.create_workflow(workflow(60, ["#DW jobdw type=xfs capacity=10GiB name=scratch"]))
    fill_servers(dws, wait_state(dws, name, "Proposal"), dws_side.mapping, HOSTS)
    advance(dws, name, "Setup")
    dws.patch_computes(name, [{"name": h} for h in HOSTS])
    advance(dws, name, "DataIn")
    advance(dws, name, "PreRun")  # mounted on both computes
    dws_side.faults.never_unmount = {"compute01"}  # its clientmount daemon is not running
    dws.remove_finalizer(name)
    looked = dws_side.controller.reconciles[name]
    dws.delete_workflow(name)
    deadline = time.monotonic() + 60
    while dws_side.controller.reconciles[name] < looked + 5:  # it looked again and again
        assert time.monotonic() < deadline, "the controller never looked at the deletion"
        time.sleep(0.01)
    assert not gone(dws_side, name)
    mount = dws.get("clientmounts", f"default-{name}-0-computes", namespace="compute01")
    assert mount["spec"]["desiredState"] == "unmounted"
    dws_side.faults.never_unmount = set()  # the daemon runs again
    deadline = time.monotonic() + 20
    while not gone(dws_side, name):
        assert time.monotonic() < deadline, "the Workflow outlived its unmounts"
        time.sleep(0.05)

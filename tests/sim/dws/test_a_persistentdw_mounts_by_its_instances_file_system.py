"""A persistentdw mounts its instance as nnf-sos mounts it, by the instance's file system:
an xfs instance is rabbit-local storage, so a compute behind another rabbit is given a
ClientMount with no mount, and more of the job's computes behind the instance's rabbit
than it holds allocations fail PreRun Fatal ("Too many clients for storage"); and an xfs
instance is mounted by one job at a time (nnf's ``lockStorage``): a second job waits in
PreRun until the first's computes unmount it."""

from __future__ import annotations

import time
from typing import Any

import pytest
from coral2_sim.dws.nnf_mounts import TOO_MANY_CLIENTS
from coral2_sim.dws.wlm import STATES

from pipeline.errors import NotFound
from tests.sim.dws.conftest import DwsSide
from tests.sim.dws.wlm_helpers import advance, fill_servers, wait_state, workflow

CREATE = "#DW create_persistent type=xfs capacity=10GiB name=proj"
USE = "#DW persistentdw name=proj"
#: the creator's two computes, behind rabbit1: the instance holds two allocations there
MADE_ON = ["compute01", "compute02"]
PENDING = "DW Directive 0: pending mount"


def make_instance(side: DwsSide) -> None:
    dws, name = side.dws, "fluxjob-200"
    dws.create_workflow(workflow(200, [CREATE]))
    fill_servers(dws, wait_state(dws, name, "Proposal"), side.mapping, MADE_ON)
    through(side, name, MADE_ON, "Teardown")


def through(side: DwsSide, name: str, hosts: list[str], last: str) -> dict[str, Any]:
    """Move Workflow ``name`` from Proposal up to ``last``, its computes ``hosts``."""
    wf: dict[str, Any] = {}
    for state in STATES[STATES.index("Setup") : STATES.index(last) + 1]:
        if state == "DataIn":
            side.dws.patch_computes(name, [{"name": h} for h in hosts])
        wf = advance(side.dws, name, state)
    return wf


def user(side: DwsSide, jobid: int, hosts: list[str], last: str) -> str:
    name = f"fluxjob-{jobid}"
    side.dws.create_workflow(workflow(jobid, [USE]))
    wait_state(side.dws, name, "Proposal")
    through(side, name, hosts, last)
    return name


def mounts(side: DwsSide, name: str, node: str) -> list[Any]:
    mount = side.dws.get("clientmounts", f"default-{name}-0-computes", namespace=node)
    return list(mount["spec"]["mounts"])


def test_a_compute_behind_another_rabbit_gets_no_mount(dws_side: DwsSide) -> None:
    make_instance(dws_side)
    name = user(dws_side, 201, ["compute01", "compute17"], "PreRun")
    assert len(mounts(dws_side, name, "compute01")) == 1
    assert mounts(dws_side, name, "compute17") == []  # behind rabbit2, which holds none


def test_more_computes_than_allocations_behind_its_rabbit_fail_prerun(
    dws_side: DwsSide,
) -> None:
    make_instance(dws_side)
    name = user(dws_side, 202, ["compute01", "compute02", "compute03"], "DataIn")
    dws_side.dws.patch_desired_state(name, "PreRun", expected_state="DataIn")
    status = wait_state(dws_side.dws, name, "PreRun", ready=False)["status"]
    assert status["status"] == "Error"
    assert status["message"] == f"DW Directive 0: WLM error: {TOO_MANY_CLIENTS}"


def test_a_second_job_waits_in_prerun_until_the_first_unmounts(dws_side: DwsSide) -> None:
    make_instance(dws_side)
    first = user(dws_side, 203, ["compute01"], "PreRun")
    second = user(dws_side, 204, ["compute02"], "DataIn")
    dws_side.dws.patch_desired_state(second, "PreRun", expected_state="DataIn")
    deadline = time.monotonic() + 30  # the driver's first pass writes why it waits
    while dws_side.dws.get_workflow(second)["status"].get("message") != PENDING:
        assert time.monotonic() < deadline, dws_side.dws.get_workflow(second)["status"]
        time.sleep(0.05)
    with pytest.raises(NotFound):  # no access for it yet: no ClientMount
        dws_side.dws.get("clientmounts", f"default-{second}-0-computes", namespace="compute02")
    advance(dws_side.dws, first, "PostRun")  # its computes unmount it
    assert wait_state(dws_side.dws, second, "PreRun")["status"]["ready"] is True

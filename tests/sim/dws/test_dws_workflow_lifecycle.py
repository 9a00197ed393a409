"""A Workflow goes through every state with the simulated DWS controller, as a WLM drives it."""

from __future__ import annotations

import time

import pytest

from pipeline.errors import NotFound
from tests.sim.dws.conftest import DwsSide
from tests.sim.dws.wlm_helpers import advance, fill_servers, wait_state, workflow

HOSTS = ["compute01", "compute02", "compute17"]


def run_to_teardown(side: DwsSide, jobid: int, directives: list[str]) -> dict:
    dws = side.dws
    name = f"fluxjob-{jobid}"
    dws.create_workflow(workflow(jobid, directives))
    wf = wait_state(dws, name, "Proposal")
    fill_servers(dws, wf, side.mapping, HOSTS)
    advance(dws, name, "Setup")
    dws.patch_computes(name, [{"name": h} for h in HOSTS])
    advance(dws, name, "DataIn")
    prerun = advance(dws, name, "PreRun")
    advance(dws, name, "PostRun")
    advance(dws, name, "DataOut")
    advance(dws, name, "Teardown")
    return prerun


def finish(side: DwsSide, name: str) -> None:
    side.dws.remove_finalizer(name)
    side.dws.delete_workflow(name)
    deadline = time.monotonic() + 10
    while True:
        try:
            side.dws.get_workflow(name)
        except NotFound:
            return
        assert time.monotonic() < deadline, "workflow was never deleted"
        time.sleep(0.01)


def test_an_xfs_workflow_reaches_teardown_and_is_deleted_with_its_children(
    dws_side: DwsSide,
) -> None:
    prerun = run_to_teardown(dws_side, 1, ["#DW jobdw type=xfs capacity=10GiB name=fast-scratch"])
    env = prerun["status"]["env"]
    uid = prerun["metadata"]["uid"]
    assert env["DW_WORKFLOW_NAME"] == "fluxjob-1"
    assert env["DW_JOB_fast_scratch"] == f"/mnt/nnf/{uid}-0"
    assert env["DW_JOB_XFS"] == env["DW_JOB_fast_scratch"]
    assert env["DW_JOBS"] == f"fast-scratch:/mnt/nnf/{uid}-0"
    assert prerun["status"]["elapsedTimeLastState"].endswith("s")
    finish(dws_side, "fluxjob-1")
    for plural in ("directivebreakdowns", "servers"):
        with pytest.raises(NotFound):
            dws_side.dws.get(plural, "fluxjob-1-0")
    with pytest.raises(NotFound):
        dws_side.dws.get("computes", "fluxjob-1")


def test_proposal_makes_breakdowns_servers_computes_and_driver_entries(dws_side: DwsSide) -> None:
    dws = dws_side.dws
    dws.create_workflow(
        workflow(
            2,
            [
                "#DW jobdw type=lustre capacity=1TiB name=lus",
                "#DW copy_in source=/lus/global/x destination=$DW_JOB_lus/",
            ],
        )
    )
    wf = wait_state(dws, "fluxjob-2", "Proposal")
    assert [r["name"] for r in wf["status"]["directiveBreakdowns"]] == ["fluxjob-2-0"]
    assert wf["status"]["computes"]["name"] == "fluxjob-2"
    states = [(d["dwdIndex"], d["watchState"]) for d in wf["status"]["drivers"]]
    assert states == [(0, s) for s in ("Proposal", "Setup", "PreRun", "PostRun", "Teardown")] + [
        (1, s) for s in ("Proposal", "DataIn", "Teardown")
    ]
    bd = dws.get("directivebreakdowns", "fluxjob-2-0")
    assert [s["label"] for s in bd["status"]["storage"]["allocationSets"]] == ["ost", "mgtmdt"]
    assert dws.get("servers", "fluxjob-2-0")["spec"] == {}


def test_a_state_without_drivers_completes_at_once(dws_side: DwsSide) -> None:
    dws = dws_side.dws
    dws.create_workflow(workflow(3, []))
    wait_state(dws, "fluxjob-3", "Proposal")
    assert advance(dws, "fluxjob-3", "Setup")["status"]["status"] == "Completed"


def test_clientmounts_follow_prerun_and_postrun(dws_side: DwsSide) -> None:
    dws = dws_side.dws
    dws.create_workflow(workflow(4, ["#DW jobdw type=gfs2 capacity=10GiB name=g1"]))
    wf = wait_state(dws, "fluxjob-4", "Proposal")
    fill_servers(dws, wf, dws_side.mapping, HOSTS)
    advance(dws, "fluxjob-4", "Setup")
    dws.patch_computes("fluxjob-4", [{"name": h} for h in HOSTS])
    advance(dws, "fluxjob-4", "DataIn")
    advance(dws, "fluxjob-4", "PreRun")
    mounts = dws.client_mounts("fluxjob-4")
    on_computes = [m for m in mounts if m["metadata"]["name"].endswith("-computes")]
    on_rabbits = [m for m in mounts if m["metadata"]["name"].endswith("-servers")]
    assert sorted(m["metadata"]["namespace"] for m in on_computes) == HOSTS
    # gfs2: nnf mounts the storage on its rabbits too, each rabbit all it holds
    rabbits = sorted(dws_side.mapping.nodes_per_rabbit(HOSTS))
    assert sorted(m["metadata"]["namespace"] for m in on_rabbits) == rabbits
    assert all(m["status"]["mounts"][0]["state"] == "mounted" for m in mounts)
    advance(dws, "fluxjob-4", "PostRun")
    after = dws.client_mounts("fluxjob-4")
    assert all(m["metadata"]["name"].endswith("-computes") for m in after)  # rabbits' gone
    assert all(m["status"]["mounts"][0]["state"] == "unmounted" for m in after)

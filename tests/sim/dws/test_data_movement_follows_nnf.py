"""The simulated nnf moves data as nnf-sos does: a copy's global path must lie on a
LustreFileSystem (else Proposal fails, on directive 0), an xfs or gfs2 copy is one
NnfDataMovement per rabbit allocation in the rabbit's namespace and a lustre one a single
movement in ``nnf-dm-system``, a failed movement fails its state Fatal with nnf's words,
and PostRun waits for the copy-offload movements a job started."""

from __future__ import annotations

import time
from typing import Any

from pipeline.clients.k8s import NNF_GROUP, NNF_VERSIONS
from tests.sim.dws.conftest import DwsSide
from tests.sim.dws.wlm_helpers import advance, fill_servers, wait_state, workflow

HOSTS = ["compute01", "compute02", "compute03", "compute04"]
XFS = "#DW jobdw type=xfs capacity=10GiB name=io"
LUSTRE = "#DW jobdw type=lustre capacity=100GiB name=io"
COPY_IN = "#DW copy_in source=/lus/global/u/in destination=$DW_JOB_io/"


def through(side: DwsSide, jobid: int, lines: list[str], last: str) -> str:
    """Create the Workflow and take it through ``last`` (its computes set after Setup)."""
    dws, name = side.dws, f"fluxjob-{jobid}"
    dws.create_workflow(workflow(jobid, lines))
    fill_servers(dws, wait_state(dws, name, "Proposal"), side.mapping, HOSTS)
    for state in ("Setup", "DataIn", "PreRun", "PostRun", "DataOut"):
        if state == "DataIn":
            dws.patch_computes(name, [{"name": h} for h in HOSTS])
        advance(dws, name, state)
        if state == last:
            break
    return name


def movements(side: DwsSide, name: str) -> list[dict[str, Any]]:
    return side.dws.datamovements(name, 1000)


def test_a_copy_from_a_path_on_no_global_lustre_is_refused_in_proposal(
    dws_side: DwsSide,
) -> None:
    lines = [XFS, "#DW copy_in source=/scratch/u/in destination=$DW_JOB_io/"]
    dws_side.dws.create_workflow(workflow(1, lines))
    status = wait_state(dws_side.dws, "fluxjob-1", "Proposal", ready=False)["status"]
    assert status["status"] == "Error"
    assert status["message"] == (
        "DW Directive 0: User error: global Lustre file system containing '/scratch/u/in' not found"
    )


def test_an_xfs_copy_is_one_movement_per_rabbit_allocation_in_the_rabbits_namespace(
    dws_side: DwsSide,
) -> None:
    name = through(dws_side, 2, [XFS, COPY_IN], "DataIn")
    servers = dws_side.dws.get("servers", f"{name}-0")
    held = {
        e["name"]: e["allocationCount"] for e in servers["spec"]["allocationSets"][0]["storage"]
    }
    found = sorted(
        (m["metadata"]["namespace"], m["metadata"]["name"]) for m in movements(dws_side, name)
    )
    assert found == sorted((r, f"{name}-1-{n}") for r, count in held.items() for n in range(count))
    labels = movements(dws_side, name)[0]["metadata"]["labels"]
    assert labels["nnf.cray.hpe.com/teardown_state"] == "DataIn"
    assert labels["nnf.cray.hpe.com/directive_index"] == "1"
    assert labels["dm.cray.hpe.com/initiator"] == "copy_in"
    assert all(m["status"]["status"] == "Success" for m in movements(dws_side, name))


def test_a_lustre_copy_is_one_movement_in_nnf_dm_system(dws_side: DwsSide) -> None:
    name = through(dws_side, 3, [LUSTRE, COPY_IN], "DataIn")
    found = [(m["metadata"]["namespace"], m["metadata"]["name"]) for m in movements(dws_side, name)]
    assert found == [("nnf-dm-system", f"{name}-1")]


def test_a_failed_movement_fails_its_state_fatal_quoting_its_message(
    dws_side: DwsSide,
) -> None:
    dws_side.faults.failed_copies.add("/lus/global/u/in")
    dws, name = dws_side.dws, "fluxjob-4"
    dws.create_workflow(workflow(4, [LUSTRE, COPY_IN]))
    fill_servers(dws, wait_state(dws, name, "Proposal"), dws_side.mapping, HOSTS)
    advance(dws, name, "Setup")
    dws.patch_computes(name, [{"name": h} for h in HOSTS])
    dws.patch_desired_state(name, "DataIn", expected_state="Setup")
    status = wait_state(dws, name, "DataIn", ready=False)["status"]
    assert status["status"] == "Error"
    assert status["message"].startswith(
        "DW Directive 1: Internal error: data movement operation failed during 'DataIn', "
        "message: simulated nnf-dm: copying '/lus/global/u/in'"
    )


def offload(side: DwsSide, name: str, rabbit: str) -> str:
    """A copy-offload request the job's user made while it ran (nnf-dm labels it PostRun)."""
    wf = side.dws.get_workflow(name)
    labels = {
        "dataworkflowservices.github.io/owner.kind": "Workflow",
        "dataworkflowservices.github.io/owner.name": name,
        "dataworkflowservices.github.io/owner.namespace": "default",
        "dataworkflowservices.github.io/workflow.name": name,
        "nnf.cray.hpe.com/teardown_state": "PostRun",
        "dm.cray.hpe.com/initiator": "copy-offload",
    }
    body = {
        "apiVersion": f"{NNF_GROUP}/{NNF_VERSIONS[0]}",
        "kind": "NnfDataMovement",
        "metadata": {"name": f"{name}-offload", "namespace": rabbit, "labels": labels},
        "spec": {"userId": wf["spec"]["userID"]},
    }
    side.dws.custom.create_namespaced_custom_object(
        NNF_GROUP, NNF_VERSIONS[0], rabbit, "nnfdatamovements", body
    )
    return f"{name}-offload"


def finish(side: DwsSide, rabbit: str, dm: str, outcome: str) -> None:
    status = {"status": {"state": "Finished", "status": outcome, "message": ""}}
    side.dws.custom.patch_namespaced_custom_object_status(
        NNF_GROUP, NNF_VERSIONS[0], rabbit, "nnfdatamovements", dm, status
    )


def test_postrun_waits_for_a_copy_offload_movement_until_it_finishes(
    dws_side: DwsSide,
) -> None:
    name = through(dws_side, 5, [XFS], "PreRun")
    dm = offload(dws_side, name, "rabbit1")
    dws_side.dws.patch_desired_state(name, "PostRun", expected_state="PreRun")
    time.sleep(0.5)  # many passes of the controller: it keeps waiting
    status = dws_side.dws.get_workflow(name)["status"]
    assert (status["state"], status["ready"]) == ("PostRun", False)
    finish(dws_side, "rabbit1", dm, "Success")
    wait_state(dws_side.dws, name, "PostRun")


def test_a_failed_copy_offload_movement_fails_postrun(dws_side: DwsSide) -> None:
    name = through(dws_side, 6, [XFS], "PreRun")
    dm = offload(dws_side, name, "rabbit1")
    finish(dws_side, "rabbit1", dm, "Failed")
    dws_side.dws.patch_desired_state(name, "PostRun", expected_state="PreRun")
    status = wait_state(dws_side.dws, name, "PostRun", ready=False)["status"]
    assert status["message"] == "DW Directive 0: Internal error: data movement failed"
    errors = [d["error"] for d in status["drivers"] if d.get("status") == "Error"]
    assert errors == [f"internal error: data movement rabbit1/{dm} failed"]

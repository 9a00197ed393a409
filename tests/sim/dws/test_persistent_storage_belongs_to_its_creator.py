"""The simulated nnf keeps persistent storage as nnf-sos does: it is Creating until its
creating job's storage is ready in Setup, and Active after; another user's persistentdw or
create_persistent is refused in Proposal ("User ID does not match existing persistent
storage") unless the instance ignores user ids; another user's destroy_persistent fails
in Teardown, where nnf checks it; and a create_persistent whose job never completed takes
its instance with it when its Workflow is deleted; the owner's destroy_persistent takes
the instance and its Servers, and the rabbit's free space counts its allocation free
again."""

from __future__ import annotations

import time

from coral2_sim.dws.wlm import STATES

from pipeline.errors import NotFound
from pipeline.perform.reads import IGNORE_UID
from tests.sim.dws.conftest import DwsSide
from tests.sim.dws.wlm_helpers import advance, fill_servers, wait_state, workflow

OWNER, OTHER = 1001, 1002
CREATE = "#DW create_persistent type=xfs capacity=10GiB name=proj"
HOSTS = ["compute01"]
NOT_YOURS = "User ID does not match existing persistent storage"


def psi_state(side: DwsSide) -> str | None:
    psi = side.dws.get("persistentstorageinstances", "proj")
    return (psi.get("status") or {}).get("state")


def created(side: DwsSide, jobid: int) -> str:
    """``proj`` created by :data:`OWNER`'s job ``jobid``, through Setup."""
    dws, name = side.dws, f"fluxjob-{jobid}"
    dws.create_workflow(workflow(jobid, [CREATE], userid=OWNER))
    fill_servers(dws, wait_state(dws, name, "Proposal"), side.mapping, HOSTS)
    assert psi_state(side) == "Creating"
    advance(dws, name, "Setup")
    assert psi_state(side) == "Active"
    return name


def run_to_end(side: DwsSide, name: str, after: str) -> None:
    for state in STATES[STATES.index(after) + 1 :]:
        if state == "DataIn":
            side.dws.patch_computes(name, [{"name": h} for h in HOSTS])
        advance(side.dws, name, state)


def proposal_message(side: DwsSide, jobid: int, directive: str, userid: int) -> str:
    name = f"fluxjob-{jobid}"
    side.dws.create_workflow(workflow(jobid, [directive], userid=userid))
    return str(wait_state(side.dws, name, "Proposal", ready=False)["status"]["message"])


def test_another_users_persistentdw_is_refused_in_proposal(dws_side: DwsSide) -> None:
    created(dws_side, 101)
    message = proposal_message(dws_side, 102, "#DW persistentdw name=proj", OTHER)
    assert (
        message == "DW Directive 0: User error: User ID does not match existing persistent storage"
    )


def test_another_users_create_persistent_over_it_is_refused_in_proposal(
    dws_side: DwsSide,
) -> None:
    created(dws_side, 103)
    message = proposal_message(dws_side, 104, CREATE, OTHER)
    assert (
        message == "DW Directive 0: User error: User ID does not match existing persistent storage"
    )


def test_an_instance_that_ignores_user_ids_is_anyones(dws_side: DwsSide) -> None:
    created(dws_side, 105)
    dws_side.dws.patch(
        "persistentstorageinstances", "proj", {"metadata": {"annotations": {IGNORE_UID: "true"}}}
    )
    dws_side.dws.create_workflow(workflow(106, ["#DW persistentdw name=proj"], userid=OTHER))
    assert wait_state(dws_side.dws, "fluxjob-106", "Proposal")["status"]["status"] == "Completed"


def test_another_users_destroy_persistent_fails_in_teardown(dws_side: DwsSide) -> None:
    run_to_end(dws_side, created(dws_side, 107), "Setup")
    name = "fluxjob-108"
    dws_side.dws.create_workflow(workflow(108, ["#DW destroy_persistent name=proj"], userid=OTHER))
    wait_state(dws_side.dws, name, "Proposal")
    dws_side.dws.patch_desired_state(name, "Teardown", expected_state="Proposal")
    status = wait_state(dws_side.dws, name, "Teardown", ready=False)["status"]
    assert status["status"] == "Error"
    assert status["message"] == (
        "DW Directive 0: User error: user ID does not match existing persistent storage"
    )
    assert psi_state(dws_side) == "Active"  # still there


def test_a_create_whose_setup_never_completed_takes_its_instance_with_it(
    dws_side: DwsSide,
) -> None:
    dws, name = dws_side.dws, "fluxjob-109"
    dws_side.faults.slow_rabbits.add("rabbit1")  # its storage never comes up
    dws.create_workflow(workflow(109, [CREATE], userid=OWNER))
    fill_servers(dws, wait_state(dws, name, "Proposal"), dws_side.mapping, HOSTS)
    dws.patch_desired_state(name, "Setup", expected_state="Proposal")
    wait_state(dws, name, "Setup", ready=False, settled=("DriverWait",))  # waits on rabbit1
    dws.patch_desired_state(name, "Teardown", expected_state="Setup")  # given up
    wait_state(dws, name, "Teardown")
    assert psi_state(dws_side) == "Creating"
    dws.remove_finalizer(name)
    dws.delete_workflow(name)
    deadline = time.monotonic() + 20
    while True:
        try:
            dws.get("persistentstorageinstances", "proj")
        except NotFound:
            break
        assert time.monotonic() < deadline, "the instance outlived its failed creation"
        time.sleep(0.02)


def test_a_create_whose_job_completed_leaves_its_instance(dws_side: DwsSide) -> None:
    dws, name = dws_side.dws, created(dws_side, 110)
    run_to_end(dws_side, name, "Setup")
    dws.remove_finalizer(name)
    dws.delete_workflow(name)
    deadline = time.monotonic() + 20
    while True:
        try:
            dws.get_workflow(name)
        except NotFound:
            break
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert psi_state(dws_side) == "Active"


def test_the_owners_destroy_persistent_takes_the_instance_and_its_servers(
    dws_side: DwsSide,
) -> None:
    free_before = free(dws_side)
    run_to_end(dws_side, created(dws_side, 110), "Setup")
    assert free(dws_side) < free_before  # the instance holds its allocation
    name = "fluxjob-111"
    dws_side.dws.create_workflow(workflow(111, ["#DW destroy_persistent name=proj"], userid=OWNER))
    wait_state(dws_side.dws, name, "Proposal")
    dws_side.dws.patch_desired_state(name, "Teardown", expected_state="Proposal")
    wait_state(dws_side.dws, name, "Teardown")
    for plural in ("persistentstorageinstances", "servers"):
        try:
            dws_side.dws.get(plural, "proj")
        except NotFound:
            continue
        raise AssertionError(f"{plural} proj outlived its destroy_persistent")
    assert free(dws_side) == free_before  # and its allocation is free again


def free(side: DwsSide) -> int:
    """rabbit1's free space, as its Storage says (``status.capacity``)."""
    return int(side.dws.get("storages", "rabbit1")["status"]["capacity"])

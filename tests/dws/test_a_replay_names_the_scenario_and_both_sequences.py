"""A replay that differs from its recording says where: the scenario, the job, the field
and both sequences; what the stacks' own pace decides (the order of concurrent prologs'
events, a driver's progress message while it waits) is not a difference."""

from __future__ import annotations

import copy

from tests.dws.compare import differences
from tests.dws.record import load


def test_a_changed_error_message_is_named_with_both_sequences() -> None:
    recorded = load("unknown-profile")["jobs"]
    played = copy.deepcopy(recorded)
    step = next(s for s in played[0]["workflow"] if s[2] == "Error")
    step[3] = "DW Directive 0: something else"
    found = differences("unknown-profile", recorded, played)
    assert "unknown-profile, job 1 of 1, workflow" in found
    assert "Unable to find NnfStorageProfile: nosuch" in found
    assert "something else" in found


def test_a_different_outcome_is_named() -> None:
    recorded = load("xfs")["jobs"]
    played = copy.deepcopy(recorded)
    played[0]["result"] = "FAILED"
    assert "xfs, job 1 of 1, result" in differences("xfs", recorded, played)


def test_the_order_of_concurrent_events_and_progress_messages_are_not_differences() -> None:
    recorded = load("xfs")["jobs"]
    played = copy.deepcopy(recorded)
    played[0]["events"].reverse()
    for step in played[0]["workflow"]:
        if step[2] == "DriverWait":
            step[3] = "DW Directive 0: allocation"
    assert differences("xfs", recorded, played) == ""


def test_a_transient_condition_that_cleared_is_not_a_difference_and_one_that_lasted_is() -> None:
    recorded = load("lustre")["jobs"]
    played = copy.deepcopy(recorded)
    steps = played[0]["workflow"]
    at = next(i for i, s in enumerate(steps) if s[1] == "Setup" and s[2] == "DriverWait")
    steps.insert(at + 1, ["Setup", "Setup", "TransientCondition", "DW Directive 0: slow"])
    assert differences("lustre", recorded, played) == ""
    lasted = copy.deepcopy(recorded)
    lasted[0]["workflow"] = [
        *lasted[0]["workflow"],
        ["Teardown", "Teardown", "TransientCondition", "x"],
    ]
    assert "lustre, job 1 of 1, workflow" in differences("lustre", recorded, lasted)

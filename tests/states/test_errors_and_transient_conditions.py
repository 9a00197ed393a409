"""Error raises a job exception; TransientCondition is tracked against tc_timeout."""

from __future__ import annotations

from pipeline.states.actions import ArmDeadline, DisarmDeadline, SendOnce, UpdateJob
from pipeline.states.observed import decide
from tests.states.factory import job, settings, snapshot


def test_an_error_raises_a_fatal_exception_with_the_workflow_message_once_per_state() -> None:
    actions = decide(
        snapshot("Setup", ready=False, status="Error", message="DW Directive 0: WLM error: x"),
        job(),
        0.0,
        settings(),
    )
    assert actions == [
        SendOnce(
            "exception",
            {
                "id": 42,
                "type": "exception",
                "severity": 0,
                "note": (
                    "DWS/Rabbit interactions failed: workflow hit an error: "
                    "DW Directive 0: WLM error: x"
                ),
            },
            "exception:error:Setup",
        )
    ]


def test_a_first_transient_condition_starts_the_clock() -> None:
    actions = decide(
        snapshot("PreRun", ready=False, status="TransientCondition", message="m"),
        job(),
        50.0,
        settings(tc_timeout=10),
    )
    assert actions == [
        ArmDeadline("tc_timeout", 10.0, "tc"),
        UpdateJob({"tc_since": 50.0, "tc_message": "m", "tc_prerun": True}),
    ]


def test_a_repeated_transient_condition_keeps_the_first_time() -> None:
    tracked = job(tc_since=50.0, tc_message="m", tc_prerun=False)
    assert (
        decide(
            snapshot("Setup", ready=False, status="TransientCondition", message="m"),
            tracked,
            55.0,
            settings(),
        )
        == []
    )
    changed = decide(
        snapshot("Setup", ready=False, status="TransientCondition", message="n"),
        tracked,
        55.0,
        settings(),
    )
    assert changed == [UpdateJob({"tc_message": "n", "tc_prerun": False})]


def test_a_cleared_condition_is_forgotten_and_its_deadline_disarmed() -> None:
    tracked = job(tc_since=50.0, tc_message="m")
    actions = decide(snapshot("Setup", ready=False, status="DriverWait"), tracked, 55.0, settings())
    assert actions == [
        DisarmDeadline("tc_timeout"),
        UpdateJob({"tc_since": None, "tc_message": "", "tc_prerun": False}),
    ]

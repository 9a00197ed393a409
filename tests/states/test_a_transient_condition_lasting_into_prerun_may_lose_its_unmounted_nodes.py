"""A TransientCondition that began in Setup and lasts into PreRun is a PreRun one when it
times out: the record says so as soon as the Workflow is seen in PreRun, even with the
same message, so the timeout loses the computes whose mounts are not up within the job's
failure tolerance instead of failing the job, as flux-coral2 does for PreRun."""

from __future__ import annotations

from pipeline.states.actions import ForceReady, SendOnce, UpdateJob
from pipeline.states.deadlines import tc_timeout
from pipeline.states.observed import decide
from tests.states.factory import job, settings, snapshot


def test_the_record_says_prerun_once_the_condition_is_seen_there() -> None:
    in_setup = job(tc_since=50.0, tc_message="m", tc_prerun=False)
    actions = decide(
        snapshot("PreRun", ready=False, status="TransientCondition", message="m"),
        in_setup,
        60.0,
        settings(),
    )
    assert actions == [UpdateJob({"tc_message": "m", "tc_prerun": True})]


def test_its_timeout_then_loses_the_unmounted_node_and_goes_on() -> None:
    in_setup = job(tc_since=50.0, tc_message="m", tc_prerun=False, failure_tolerance=1)
    [update] = decide(
        snapshot("PreRun", ready=False, status="TransientCondition", message="m"),
        in_setup,
        60.0,
        settings(),
    )
    assert isinstance(update, UpdateJob)
    in_prerun = in_setup.model_copy(update=update.changes)
    actions = tc_timeout(in_prerun, ["c3"], {"c3": "rabbit1"})
    assert ForceReady() in actions
    failures = [a for a in actions if isinstance(a, SendOnce) and a.kind == "exception"]
    assert [a.payload["type"] for a in failures] == ["dws-node-failure"]  # no fatal one


def test_a_condition_that_stayed_in_setup_fails_the_job() -> None:
    stayed = job(tc_since=50.0, tc_message="m", tc_prerun=False, failure_tolerance=1)
    actions = tc_timeout(stayed, ["c3"], {"c3": "rabbit1"})
    failures = [a for a in actions if isinstance(a, SendOnce) and a.kind == "exception"]
    assert [a.payload["severity"] for a in failures] == [0]

"""Setup, DataIn, PreRun, PostRun and DataOut completions do what flux-coral2 does."""

from __future__ import annotations

import pytest

from pipeline.model.job import Teardown
from pipeline.states.actions import (
    ArmDeadline,
    DisarmDeadline,
    MarkDone,
    PatchComputes,
    PatchDesiredState,
    SendOnce,
)
from pipeline.states.observed import decide
from tests.states.factory import job, settings, snapshot


@pytest.mark.parametrize(
    ("state", "nxt"),
    [("Setup", "DataIn"), ("DataIn", "PreRun"), ("PostRun", "DataOut")],
)
def test_a_complete_state_asks_for_the_next_one_guarded_by_the_current(
    state: str, nxt: str
) -> None:
    actions = decide(snapshot(state), job(), 0.0, settings())
    assert PatchDesiredState(state, nxt) in actions


def test_a_complete_dataout_asks_for_teardown_from_whatever_state_it_is_in() -> None:
    actions = decide(snapshot("DataOut"), job(), 0.0, settings())
    assert PatchDesiredState(None, "Teardown") in actions


@pytest.mark.parametrize("state", ["Setup", "DataIn", "PreRun", "PostRun", "DataOut"])
def test_each_completion_saves_its_timing(state: str) -> None:
    actions = decide(snapshot(state, elapsed="3.25s"), job(), 0.0, settings())
    keys = {
        a.payload["key"]: a.payload["value"]
        for a in actions
        if isinstance(a, SendOnce) and a.kind == "kvs-put"
    }
    assert keys[f"rabbit_{state.lower()}_timing"] == "3.25s"


def test_setup_fills_computes_without_the_failed_nodes() -> None:
    actions = decide(snapshot("Setup"), job(failed_nodes=["c2"]), 0.0, settings())
    assert PatchComputes(("c1", "c3")) in actions


def test_datain_arms_the_prerun_timeout_only_when_configured() -> None:
    assert not any(
        isinstance(a, ArmDeadline) for a in decide(snapshot("DataIn"), job(), 100.0, settings())
    )
    actions = decide(snapshot("DataIn"), job(), 100.0, settings(prerun_timeout=30))
    assert ArmDeadline("prerun_timeout", 30.0, "pre_run") in actions


def test_prerun_hands_the_environment_and_token_to_flux_once() -> None:
    env = {"DW_JOB_scratch": "/mnt/nnf/u-0", "DW_WORKFLOW_NAME": "fluxjob-42"}
    actions = decide(snapshot("PreRun", env=env, workflow_token="s3cret"), job(), 0.0, settings())
    (prolog,) = [a for a in actions if isinstance(a, SendOnce) and a.kind == "prolog-remove"]
    assert prolog.payload == {"id": 42, "variables": {**env, "DW_WORKFLOW_TOKEN": "s3cret"}}
    assert prolog.mark == "prolog-remove"
    assert DisarmDeadline("prerun_timeout") in actions


def test_prerun_complete_does_not_advance_the_workflow() -> None:
    actions = decide(snapshot("PreRun"), job(), 0.0, settings())
    assert not any(isinstance(a, PatchDesiredState) for a in actions)


def test_dataout_saves_failed_datamovements_first_and_marks_the_job_torn_down() -> None:
    moves = (
        {"metadata": {"name": "ok"}, "status": {"status": "Succeeded"}},
        {"metadata": {"name": "bad"}, "status": {"status": "Failed"}},
    )
    actions = decide(
        snapshot("DataOut", datamovements=moves), job(), 0.0, settings(save_datamovements=1)
    )
    saved = next(
        a.payload["value"]
        for a in actions
        if isinstance(a, SendOnce) and a.payload.get("key") == "rabbit_datamovements"
    )
    assert [m["metadata"]["name"] for m in saved] == ["bad"]
    assert MarkDone({"teardown": Teardown.ASKED}) in actions


def test_no_datamovements_are_saved_unless_asked() -> None:
    actions = decide(snapshot("DataOut"), job(), 0.0, settings())
    saved = next(
        a.payload["value"]
        for a in actions
        if isinstance(a, SendOnce) and a.payload.get("key") == "rabbit_datamovements"
    )
    assert saved == []

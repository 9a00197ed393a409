"""Leaving DataOut saves what flux-coral2 saves in the job's KVS: the Workflow as it was,
the state's timing, and up to ``save_datamovements`` data movements, the failed ones first
and each once (0: none); a Workflow with no state yet names its timing Proposal's."""

from __future__ import annotations

from typing import Any

from pipeline.states.actions import SendOnce
from pipeline.states.data_out import datamovements, move_to_teardown
from tests.states.factory import job, settings, snapshot


def movement(name: str, status: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"status": status}}


MOVES = (movement("a", "Success"), movement("b", "Failed"), movement("c", "Success"))


def puts(actions: list[object]) -> dict[str, dict[str, Any]]:
    return {
        a.payload["key"]: a.payload
        for a in actions
        if isinstance(a, SendOnce) and a.kind == "kvs-put"
    }


def test_failed_movements_come_first_each_once_up_to_the_limit() -> None:
    shot = snapshot("DataOut", datamovements=MOVES)
    assert [m["metadata"]["name"] for m in datamovements(shot, 3)] == ["b", "a", "c"]
    assert [m["metadata"]["name"] for m in datamovements(shot, 2)] == ["b", "a"]
    assert datamovements(shot, 0) == []


def test_the_workflow_its_timing_and_the_movements_are_put_for_the_job() -> None:
    shot = snapshot("DataOut", datamovements=MOVES, elapsed="4s")
    saved = puts(move_to_teardown(shot, job(), settings(save_datamovements=1)))
    assert saved["rabbit_workflow"] == {
        "id": 42, "key": "rabbit_workflow", "value": shot.workflow,
    }  # fmt: skip
    assert saved["rabbit_datamovements"]["id"] == 42
    assert saved["rabbit_datamovements"]["value"] == [MOVES[1]]
    assert saved["rabbit_dataout_timing"]["value"] == "4s"


def test_a_workflow_with_no_state_names_its_timing_proposals() -> None:
    shot = snapshot(None, desired="Proposal", elapsed="1s")
    assert "rabbit_proposal_timing" in puts(move_to_teardown(shot, job(), settings()))

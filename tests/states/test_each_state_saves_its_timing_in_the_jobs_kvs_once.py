"""Each state the pipeline moves a job out of saves how long DWS took in it, as
flux-coral2 does: ``rabbit_<state>_timing`` in that job's KVS directory, the Workflow's
``elapsedTimeLastState`` as its value, put once per key (a re-run of the observe puts it
again under the same once-mark, never a second time)."""

from __future__ import annotations

import pytest

from pipeline.states.actions import SendOnce, kvs_put
from pipeline.states.observed import decide
from tests.states.factory import job, settings, snapshot


@pytest.mark.parametrize("state", ["Setup", "DataIn", "PreRun", "PostRun", "DataOut", "Teardown"])
def test_the_state_left_puts_its_timing_under_its_own_key(state: str) -> None:
    actions = decide(snapshot(state, elapsed="2.5s"), job(workflow="fluxjob-42"), 100.0, settings())
    key = f"rabbit_{state.lower()}_timing"
    put = SendOnce("kvs-put", {"id": 42, "key": key, "value": "2.5s"}, f"kvs:{key}")
    assert put in actions


def test_a_workflow_that_gives_no_elapsed_time_puts_none() -> None:
    actions = decide(snapshot("Setup", elapsed=None), job(workflow="fluxjob-42"), 100.0, settings())
    assert not [a for a in actions if isinstance(a, SendOnce) and a.kind == "kvs-put"]


def test_a_kvs_put_names_its_job_and_is_marked_by_its_key() -> None:
    assert kvs_put(7, "rabbit_workflow", {"a": 1}) == SendOnce(
        "kvs-put", {"id": 7, "key": "rabbit_workflow", "value": {"a": 1}}, "kvs:rabbit_workflow"
    )

"""A Flux jobid is an unsigned 64-bit integer: every hook refuses one beyond 2**64 - 1 (or
below 0) with one line naming the field, and enqueues nothing — a ``job-state`` for 2**70
reserves no VNI."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.errors import InputError
from pipeline.model.jobid import MAX_JOBID, decode_jobid
from pipeline.services.hooks import HookError, Hooks
from pipeline.settings import load_settings
from tests.services.hooks.test_hook_validation import RESOURCES, Queue, R

CALLS = {
    "dws_create": {
        "userid": 1001,
        "dw_directives": "#DW jobdw type=xfs capacity=1GiB name=ab",
        "resources": RESOURCES,
    },
    "dws_setup": {"R": R},
    "dws_post_run": {"run_started": True},
    "dws_teardown": {},
    "job_state": {"state": "run", "userid": 1001, "R": R},
}


@pytest.mark.parametrize("jobid", [2**64, 2**70, -1])
@pytest.mark.parametrize("hook", sorted(CALLS))
def test_the_hook_refuses_the_jobid_and_enqueues_nothing(hook: str, jobid: int) -> None:
    queue = Queue()
    hooks = Hooks(load_settings(env={}), queue, owner_uid=0)
    payload: dict[str, Any] = {"jobid": jobid, **CALLS[hook]}
    with pytest.raises(HookError, match="jobid"):
        getattr(hooks, hook)(payload)
    assert queue.sent == []


def test_the_largest_jobid_is_taken() -> None:
    queue = Queue()
    Hooks(load_settings(env={}), queue, owner_uid=0).dws_teardown({"jobid": MAX_JOBID})
    assert queue.sent and queue.sent[0][1]["jobid"] == MAX_JOBID


def test_a_jobid_given_as_a_number_is_checked_like_one_given_as_text() -> None:
    with pytest.raises(InputError, match="64-bit"):
        decode_jobid(2**64)

"""The job-state hook: RUN and CLEANUP of every job become Slingshot tasks; bad reports are
refused with what is wrong and enqueue nothing."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.services.hooks import Hooks
from pipeline.settings import load_settings

R = {
    "version": 1,
    "execution": {"R_lite": [{"rank": "0-1", "children": {"core": "0-3"}}], "nodelist": ["c[1-2]"]},
}


@pytest.fixture
def sent() -> list[tuple[str, dict[str, Any]]]:
    return []


@pytest.fixture
def hooks(sent: list[tuple[str, dict[str, Any]]]) -> Hooks:
    return Hooks(load_settings(env={}), lambda name, kw: sent.append((name, kw)), owner_uid=0)


def test_run_enqueues_the_reservation_with_the_jobs_option(hooks: Hooks, sent: list[Any]) -> None:
    options = {"cray-slingshot": {"vnicount": 2}, "other": 1}
    payload = {"jobid": 5, "state": "run", "userid": 1001, "R": R, "shell_options": options}
    assert hooks.dispatch("job-state", payload) == {"success": True}
    expected = {"jobid": 5, "userid": 1001, "R": R, "option": {"vnicount": 2}, "dw": False}
    assert sent == [("job.run", {**expected, "hwcoll": False})]


def test_a_job_run_with_the_hwcoll_option_asks_for_hardware_collectives(
    hooks: Hooks, sent: list[Any]
) -> None:
    payload = {"jobid": 6, "state": "run", "userid": 1001, "R": R, "shell_options": {"hwcoll": 1}}
    hooks.dispatch("job-state", payload)
    assert sent[0][1]["hwcoll"] is True


def test_cleanup_enqueues_the_release(hooks: Hooks, sent: list[Any]) -> None:
    assert hooks.dispatch("job-state", {"jobid": 5, "state": "cleanup"}) == {"success": True}
    assert sent == [("job.cleanup", {"jobid": 5})]


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({"jobid": 5, "state": "run"}, "a job entering RUN needs its R"),
        ({"jobid": 5, "state": "sched"}, "state"),
        ({"jobid": -1, "state": "cleanup"}, "jobid"),
        ({"jobid": 5, "state": "run", "userid": 1001, "R": {"version": 9}}, "version"),
        ({"jobid": 5, "state": "run", "R": {"version": 1}}, "a job entering RUN needs it"),
    ],
    ids=["no-R", "unknown-state", "negative-jobid", "bad-R", "no-userid"],
)
def test_a_bad_report_is_refused_and_nothing_is_enqueued(
    hooks: Hooks, sent: list[Any], payload: dict[str, Any], fragment: str
) -> None:
    answer = hooks.dispatch("job-state", payload)
    assert answer["success"] is False
    assert fragment in answer["errstr"]
    assert sent == []

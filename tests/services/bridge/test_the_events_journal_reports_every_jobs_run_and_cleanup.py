"""The bridge reads the job manager's events journal and reports each job's RUN (with its
R, user, shell options and #DW) and CLEANUP once, keeping reports the pipeline could not
take until it can."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.errors import StoreUnavailable
from pipeline.services.bridge.journal import JobStates
from pipeline.services.hooks import Hooks
from pipeline.settings import load_settings

R = {
    "version": 1,
    "execution": {"R_lite": [{"rank": "0", "children": {"core": "0-3"}}], "nodelist": ["c1"]},
}
JOBSPEC = {
    "attributes": {"system": {"dw": "#DW jobdw", "shell": {"options": {"cray-slingshot": "off"}}}}
}


class Enqueue:
    """What the hooks send, or StoreUnavailable while ``down``."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.down = False

    def __call__(self, name: str, kwargs: dict[str, Any]) -> None:
        if self.down:
            raise StoreUnavailable("Redis unavailable: connection refused")
        self.sent.append((name, kwargs))


@pytest.fixture
def enqueue() -> Enqueue:
    return Enqueue()


@pytest.fixture
def states(enqueue: Enqueue) -> JobStates:
    return JobStates(Hooks(load_settings(env={}), enqueue, owner_uid=0))


def event(name: str, **context: Any) -> dict[str, Any]:
    return {"timestamp": 1.0, "name": name, "context": context}


def feed_life(states: JobStates, jobid: int, *, end: dict[str, Any]) -> None:
    states.feed({"id": jobid, "events": [event("submit", userid=1001)], "jobspec": JOBSPEC})
    states.feed({"id": jobid, "events": [event("alloc")], "R": R})
    states.feed({"id": jobid, "events": [event("start")]})
    states.feed({"id": jobid, "events": [end]})
    states.feed({"id": jobid, "events": [event("clean")]})


def test_a_job_is_reported_at_alloc_and_at_finish(states: JobStates, enqueue: Enqueue) -> None:
    feed_life(states, 5, end=event("finish", status=0))
    assert enqueue.sent == [
        (
            "job.run",
            {"jobid": 5, "userid": 1001, "R": R, "option": "off", "hwcoll": False, "dw": True},
        ),
        ("job.cleanup", {"jobid": 5}),
    ]
    assert states.jobs == {}


def test_a_running_jobs_fatal_exception_waits_for_its_finish_to_be_cleanup(
    states: JobStates, enqueue: Enqueue
) -> None:
    states.feed({"id": 6, "events": [event("submit", userid=1001)], "jobspec": JOBSPEC})
    states.feed({"id": 6, "events": [event("alloc")], "R": R})
    states.feed({"id": 6, "events": [event("start")]})
    states.feed({"id": 6, "events": [event("exception", type="cancel", severity=0, note="")]})
    assert [name for name, _ in enqueue.sent] == ["job.run"]  # its tasks still run
    states.feed({"id": 6, "events": [event("finish", status=15)]})
    assert [name for name, _ in enqueue.sent] == ["job.run", "job.cleanup"]


def test_a_fatal_exception_before_start_is_cleanup_at_once_and_only_once(
    states: JobStates, enqueue: Enqueue
) -> None:
    states.feed({"id": 16, "events": [event("submit", userid=1001)], "jobspec": JOBSPEC})
    states.feed({"id": 16, "events": [event("alloc")], "R": R})
    states.feed({"id": 16, "events": [event("exception", type="dws-setup", severity=0)]})
    states.feed({"id": 16, "events": [event("exception", type="cancel", severity=0)]})
    assert [name for name, _ in enqueue.sent] == ["job.run", "job.cleanup"]


def test_a_job_that_never_ran_is_not_reported(states: JobStates, enqueue: Enqueue) -> None:
    states.feed({"id": 7, "events": [event("submit", userid=1), event("exception", severity=0)]})
    assert enqueue.sent == []


def test_the_backlog_of_an_active_job_reports_it_once(states: JobStates, enqueue: Enqueue) -> None:
    backlog = [event("submit", userid=1001), event("alloc"), event("start")]
    states.feed({"id": 8, "events": backlog, "jobspec": JOBSPEC, "R": R})
    states.feed({"id": -1, "events": []})
    assert [name for name, _ in enqueue.sent] == ["job.run"]
    assert states.caught_up


def test_reports_wait_while_redis_is_down_and_go_in_order_after(
    states: JobStates, enqueue: Enqueue
) -> None:
    enqueue.down = True
    feed_life(states, 9, end=event("finish", status=0))
    assert enqueue.sent == [] and len(states.pending) == 2
    enqueue.down = False
    assert states.flush() == 0
    assert [name for name, _ in enqueue.sent] == ["job.run", "job.cleanup"]


def test_a_malformed_response_is_skipped(states: JobStates, enqueue: Enqueue) -> None:
    states.feed({"events": [event("alloc")]})
    states.feed({"id": 10, "events": ["not an event"]})
    assert enqueue.sent == []


def test_a_job_holding_vnis_that_ended_while_nobody_read_is_cleaned_up(enqueue: Enqueue) -> None:
    hooks = Hooks(load_settings(env={}), enqueue, owner_uid=0)
    states = JobStates(hooks, reserved=lambda: [8, 11])
    backlog = [event("submit", userid=1001), event("alloc")]
    states.feed({"id": 8, "events": backlog, "jobspec": JOBSPEC, "R": R})  # still active
    states.feed({"id": -1, "events": []})
    assert ("job.cleanup", {"jobid": 11}) in enqueue.sent
    assert ("job.cleanup", {"jobid": 8}) not in enqueue.sent

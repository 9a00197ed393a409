"""When Redis has restarted or lost its data (its run_id or the store's epoch changed),
the bridge sends again, from the events journal, every DWS request a job still waits on:
``dws.create`` while it waits on ``dws-create``, ``dws.setup`` while its ``dws-setup``
prolog runs, ``dws.post_run`` while its ``dws-epilog`` epilog runs — built as dws-jobtap
built them — and the RUN of every job the job-manager prolog still holds. A wait that
ended, a job that died before its create, or Redis answering again as it was, sends
nothing."""

from __future__ import annotations

from typing import Any

from pipeline.services.bridge.journal import RESTART_CHECK_S, JobStates
from pipeline.services.hooks import Hooks
from pipeline.settings import load_settings

DW = "#DW jobdw type=xfs capacity=10GiB name=scratch"
SLOT = {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
JOBSPEC = {"resources": [{"type": "node", "count": 1, "with": [SLOT]}],
           "attributes": {"system": {"dw": DW}}}  # fmt: skip
R = {"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0"}}],
                                 "nodelist": ["compute01"]}}  # fmt: skip


class Redis:
    """The hooks' sends, and a run_id a test changes as a restart would."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.run = "run-1"

    def __call__(self, name: str, kwargs: dict[str, Any]) -> None:
        self.sent.append((name, kwargs))


def event(name: str, **context: Any) -> dict[str, Any]:
    return {"timestamp": 1.0, "name": name, "context": context}


def states_over(redis: Redis) -> JobStates:
    hooks = Hooks(load_settings(env={}), redis, owner_uid=0)
    return JobStates(hooks, generation=lambda: redis.run)


def look(states: JobStates) -> None:
    """A flush once the restart check is due again."""
    states._checked -= RESTART_CHECK_S  # the reactor's next look, without sleeping for it
    states.flush()


def submitted(states: JobStates, jobid: int) -> None:
    states.feed({"id": jobid, "events": [event("submit", userid=1001)], "jobspec": JOBSPEC})
    states.feed({"id": jobid, "events": [event("dependency-add", description="dws-create")]})


def test_a_job_waiting_on_its_create_is_created_again() -> None:
    redis = Redis()
    states = states_over(redis)
    look(states)  # the run_id as it starts
    submitted(states, 7)
    redis.sent.clear()
    redis.run = "run-2"
    look(states)
    [kwargs] = [sent for name, sent in redis.sent if name == "dws.create"]
    assert kwargs["jobid"] == 7 and kwargs["directives"] == [DW]
    assert kwargs["userid"] == 1001 and kwargs["resources"] == JOBSPEC["resources"]


def test_a_job_in_its_setup_prolog_and_one_in_its_epilog_are_sent_again() -> None:
    redis = Redis()
    states = states_over(redis)
    look(states)
    for jobid in (8, 9):
        submitted(states, jobid)
        states.feed({"id": jobid, "events": [event("dependency-remove", description="dws-create")]})
        states.feed({"id": jobid, "events": [event("alloc")], "R": R})
        states.feed({"id": jobid, "events": [event("prolog-start", description="dws-setup")]})
    states.feed({"id": 9, "events": [event("prolog-finish", description="dws-setup")]})
    states.feed({"id": 9, "events": [event("start"), event("finish", status=0)]})
    states.feed({"id": 9, "events": [event("epilog-start", description="dws-epilog")]})
    redis.sent.clear()
    redis.run = "run-2"
    look(states)
    names = [(name, kwargs.get("jobid")) for name, kwargs in redis.sent]
    assert ("dws.setup", 8) in names and ("dws.post_run", 9) in names
    assert ("job.run", 8) in names  # still held in the job-manager prolog
    assert ("job.cleanup", 9) in names
    assert ("dws.create", 8) not in names and ("dws.setup", 9) not in names


def test_a_job_that_died_before_its_create_and_an_unchanged_run_id_send_nothing() -> None:
    redis = Redis()
    states = states_over(redis)
    look(states)
    submitted(states, 10)
    states.feed({"id": 10, "events": [event("exception", type="cancel", severity=0)]})
    redis.sent.clear()
    look(states)
    assert redis.sent == []
    redis.run = "run-2"
    look(states)
    assert [name for name, _ in redis.sent if name.startswith("dws.")] == []

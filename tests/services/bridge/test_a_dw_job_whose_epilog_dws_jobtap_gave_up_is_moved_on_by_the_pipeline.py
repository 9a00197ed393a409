"""When nothing serves ``dws.post_run`` as a #DW job finishes (the bridge down, Flux
restarting), dws-jobtap gives the job's DWS epilog up with a ``dws-epilog`` exception. The
bridge reports that as ``epilog-lost`` — live from the journal, or, for a job that ended
while nobody read it, from the job's eventlog — so the pipeline moves the Workflow on as
``dws.post_run`` would."""

from __future__ import annotations

from typing import Any

from pipeline.errors import FluxError
from pipeline.model.eventlog import EventlogEntry
from pipeline.services.bridge.journal import SENTINEL, JobStates
from pipeline.services.hooks import Hooks
from pipeline.settings import load_settings
from tests.services.bridge.test_the_events_journal_reports_every_jobs_run_and_cleanup import (
    JOBSPEC,
    Enqueue,
    R,
    event,
)

GAVE_UP = {
    "type": "dws-epilog",
    "severity": 0,
    "note": "DWS workflow interactions failed: Failed to send dws.post_run RPC",
}


def states_of(enqueue: Enqueue, **options: Any) -> JobStates:
    return JobStates(Hooks(load_settings(env={}), enqueue, owner_uid=0), **options)


def test_the_exception_in_the_journal_is_reported_with_whether_the_job_ran() -> None:
    enqueue = Enqueue()
    states = states_of(enqueue)
    states.feed({"id": 7, "events": [event("submit", userid=1001)], "jobspec": JOBSPEC})
    states.feed({"id": 7, "events": [event("alloc")], "R": R})
    states.feed({"id": 7, "events": [event("start"), event("finish", status=0)]})
    states.feed({"id": 7, "events": [event("exception", **GAVE_UP)]})
    assert enqueue.sent[1:] == [
        ("job.cleanup", {"jobid": 7}),
        ("dws.epilog_lost", {"jobid": 7, "run_started": True}),
    ]


def test_a_job_without_dw_has_no_dws_epilog_to_lose() -> None:
    enqueue = Enqueue()
    states = states_of(enqueue)
    plain = {"attributes": {"system": {}}}
    states.feed({"id": 8, "events": [event("submit", userid=1001)], "jobspec": plain})
    states.feed({"id": 8, "events": [event("exception", **GAVE_UP)]})
    assert enqueue.sent == []


def eventlog_of(logs: dict[int, list[str]]) -> Any:
    def eventlog(jobid: int) -> list[EventlogEntry]:
        if jobid not in logs:
            raise FluxError(f"job {jobid}: job-info.lookup: No such file or directory")
        return [
            EventlogEntry(timestamp=1.0, name=name, context=GAVE_UP if name == "exception" else {})
            for name in logs[jobid]
        ]

    return eventlog


def test_a_job_that_ended_while_nobody_read_the_journal_is_found_in_its_eventlog() -> None:
    enqueue = Enqueue()
    logs = {
        11: ["submit", "alloc", "start", "finish", "exception", "clean"],  # gave up, ran
        12: ["submit", "alloc", "exception", "clean"],  # gave up, never started
        13: ["submit", "alloc", "start", "finish", "clean"],  # its epilog ended well
    }
    states = states_of(enqueue, held=lambda: [11, 12, 13, 14, 15], eventlog=eventlog_of(logs))
    states.feed({"id": 15, "events": [event("submit", userid=1)], "jobspec": JOBSPEC})
    states.feed({"id": SENTINEL})  # 15 is active; 14 is unknown to Flux
    assert enqueue.sent == [
        ("dws.epilog_lost", {"jobid": 11, "run_started": True}),
        ("dws.epilog_lost", {"jobid": 12, "run_started": False}),
    ]

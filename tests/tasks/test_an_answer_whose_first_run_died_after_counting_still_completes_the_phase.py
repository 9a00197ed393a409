"""A node's answer is counted, then the worker running it dies before it sends the
decision that the phase is complete. The copy that kombu or the ledger delivers again
finds the node counted already — and must still send the decision: else the job waits
for its node timeout and fails, though every node answered (found by ``make chaos``)."""

from __future__ import annotations

import time

from celery import Celery

from pipeline.model.job import JobRecord, NodeWork
from pipeline.store import Store


def decisions_sent(store: Store, jobid: int) -> list[str]:
    return [
        e.name
        for e in store.ledger.unsettled(1000)
        if e.name == "job.answers_complete" and e.kwargs.get("jobid") == jobid
    ]


def held_on_c1_and_c2(store: Store, jobid: int) -> None:
    """The job's record, which proves the copies (their ledger entries are crossed out)."""
    work = NodeWork(nodes=["c1", "c2"], since=time.time(), timeout_s=300)
    store.jobs.create(JobRecord(jobid=jobid, node_work=work))


def test_the_copy_of_the_last_prolog_answer_sends_the_decision(app: Celery, store: Store) -> None:
    held_on_c1_and_c2(store, 77)
    store.tally.expect(77, 2)
    store.tally.add(77, "prolog", "c1")
    store.tally.add(77, "prolog", "c2")  # the first run of c2's answer: counted, then killed
    assert decisions_sent(store, 77) == []
    app.tasks["job.prolog_done"].apply(kwargs={"jobid": 77, "node": "c2", "task_id": "t-2"}).get()
    assert decisions_sent(store, 77) == ["job.answers_complete"]


def test_an_answer_before_the_last_sends_no_decision(app: Celery, store: Store) -> None:
    held_on_c1_and_c2(store, 78)
    store.tally.expect(78, 2)
    store.tally.add(78, "prolog", "c1")  # counted once, then delivered again
    app.tasks["job.prolog_done"].apply(kwargs={"jobid": 78, "node": "c1", "task_id": "t-1"}).get()
    assert decisions_sent(store, 78) == []

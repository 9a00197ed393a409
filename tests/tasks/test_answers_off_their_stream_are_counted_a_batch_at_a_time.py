"""Node answers appended to each node's answers stream are read in batches by the lifecycle
worker's reader: the answers the ledger proves are counted in one step, their node tasks
crossed out, the phase completed once; an answer the ledger does not prove goes on as its
own task; an entry that is no node answer is set aside; a reader killed before deleting
what it read reads it again, and counts nothing twice."""

from __future__ import annotations

import json
import time
from typing import Any

from celery import Celery

from pipeline.model.answers import PrologDone
from pipeline.platform.answers import encode
from pipeline.store import Store
from pipeline.tasks.answers import AnswerReader
from tests.tasks.eager_app import store_of_app

JOBID = 951
NODES = ["n1", "n2", "n3"]


def send_prologs(app: Celery, store: Store) -> dict[str, str]:
    """Note each node's prolog in the ledger as ``job.run`` does; the task id of each."""
    prefix = app.conf.coral2_settings.pipeline.queues.node_prefix
    ids = {node: f"prolog-{node}" for node in NODES}
    notes = [(ids[n], "node.prolog", {"jobid": JOBID}, prefix + n) for n in NODES]
    store.ledger.note_all(notes, now=time.time(), resend_after_s=120.0)
    store.answers.await_(NODES, time.time())
    store.tally.expect(JOBID, len(NODES))
    return ids


def answer(app: Celery, store: Store, node: str, task_id: str) -> None:
    entry = encode(app, PrologDone(jobid=JOBID, node=node, task_id=task_id))
    store.client.xadd(store.keys.node_answers(node), entry)  # type: ignore[arg-type]


def sent(store: Store, name: str) -> list[dict[str, Any]]:
    """The arguments of every ``name`` task the reader sent (noted in the ledger)."""
    raw: Any = store.client.hgetall(store.keys.ledger)
    entries = [json.loads(v) for v in raw.values()]
    return [e["kwargs"] for e in entries if e["name"] == name]


def test_proven_answers_are_counted_together_and_complete_the_phase_once(app: Celery) -> None:
    store = store_of_app(app)
    ids = send_prologs(app, store)
    for node in NODES:
        answer(app, store, node, ids[node])
    reader = AnswerReader(app, "lifecycle@test")
    assert reader.step(block_ms=None) == 3
    assert store.tally.nodes(JOBID, "prolog") == set(NODES)
    assert store.ledger.get_all(list(ids.values())) == [None, None, None]  # crossed out
    assert sent(store, "job.answers_complete") == [{"jobid": JOBID}]
    assert store.answers.waiting() == 0


def test_an_answer_the_ledger_does_not_prove_goes_on_as_its_task(app: Celery) -> None:
    store = store_of_app(app)
    ids = send_prologs(app, store)
    answer(app, store, "n2", ids["n1"])  # n1's task, answered by n2
    AnswerReader(app, "lifecycle@test").step(block_ms=None)
    assert store.tally.nodes(JOBID, "prolog") == set()
    assert sent(store, "job.prolog_done") == [{"jobid": JOBID, "node": "n2", "task_id": ids["n1"]}]


def test_an_entry_that_is_no_node_answer_is_set_aside(app: Celery) -> None:
    store = store_of_app(app)
    send_prologs(app, store)
    entry = encode(app, PrologDone(jobid=JOBID, node="n1", task_id="x"))
    store.client.xadd(store.keys.node_answers("n1"), {**entry, "task": "dws.teardown"})
    AnswerReader(app, "lifecycle@test").step(block_ms=None)
    (letter,) = store.dead_letters.latest(10)
    assert "'dws.teardown' is not a node answer" in letter.reason
    assert letter.where == "n1:answers"
    assert sent(store, "dws.teardown") == []
    assert store.answers.waiting() == 0


def test_a_reader_killed_before_deleting_its_batch_counts_it_when_read_again(
    app: Celery,
) -> None:
    store = store_of_app(app)
    ids = send_prologs(app, store)
    for node in NODES:
        answer(app, store, node, ids[node])
    taken, _, _ = store.answers.read(NODES, 10, None)  # then killed
    assert sum(map(len, taken.values())) == 3 and store.tally.nodes(JOBID, "prolog") == set()
    again = AnswerReader(app, "lifecycle@test")  # the next reader
    assert again.step(block_ms=None) == 3
    assert store.tally.nodes(JOBID, "prolog") == set(NODES)
    assert sent(store, "job.answers_complete") == [{"jobid": JOBID}]
    assert store.answers.waiting() == 0

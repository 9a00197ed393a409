"""Whatever answers nodes append — well formed or with an extra, missing or mistyped
argument, a huge reason, a job id past 64 bits, for a job that does not exist, twice, or
naming another node than its stream's — one pass of the reader deletes every entry it
read, raises nothing, counts exactly the well-formed answers that the ledger proves, each
node once, and leaves no count behind for a job that was never sent work."""

from __future__ import annotations

import itertools
import time
from typing import Any

from celery import Celery
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kombu.serialization import dumps

from pipeline.model.answers import PrologDone
from pipeline.platform.answers import encode
from pipeline.tasks.answers import AnswerReader
from tests.tasks.eager_app import store_of_app

NODES = ("n1", "n2", "n3")
_round = itertools.count()

#: How an answer of the example's job, sent by one of its nodes on its own stream, is bent.
SHAPES = ("good", "extra", "missing", "mistyped", "huge", "past-64-bits", "unknown-job",
          "other-node")  # fmt: skip


def kwargs_of(shape: str, jobid: int, node: str, task_id: str) -> dict[str, Any]:
    base: dict[str, Any] = {"jobid": jobid, "node": node, "task_id": task_id}
    bent: dict[str, dict[str, Any]] = {
        "good": base,
        "extra": {**base, "extra": 1},
        "missing": {"jobid": jobid, "node": node},
        "mistyped": {**base, "jobid": str(jobid)},
        "huge": {**base, "error": "x" * 100_000},
        "past-64-bits": {**base, "jobid": 2**64 + jobid},
        "unknown-job": {**base, "jobid": jobid + 10**9},
        "other-node": {**base, "node": "elsewhere"},
    }
    return bent[shape]


def entry(app: Celery, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The stream entry a node worker would append, its body whatever ``kwargs`` are."""
    made = encode(app, PrologDone(jobid=1, node="n1", task_id="t"))
    embed = {"coral2_claim": {"task": "job.prolog_done", "id": made["id"]}}
    ct, ce, body = dumps([[], kwargs, embed], app.conf.task_serializer)  # type: ignore[no-untyped-call]
    return {**made, "ct": ct, "ce": ce, "body": body}


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(answers=st.lists(st.tuples(st.sampled_from(NODES), st.sampled_from(SHAPES)), max_size=12))
def test_one_pass_deletes_all_counts_the_proven_and_raises_nothing(
    app: Celery, answers: list[tuple[str, str]]
) -> None:
    store = store_of_app(app)
    n = next(_round)
    jobid = 4000 + n
    hosts = {node: f"r{n}-{node}" for node in NODES}  # each example's own nodes
    prefix = app.conf.coral2_settings.pipeline.queues.node_prefix
    notes = [
        (f"t{n}-{node}", "node.prolog", {"jobid": jobid}, prefix + hosts[node]) for node in NODES
    ]
    store.ledger.note_all(notes, now=time.time(), resend_after_s=3600.0)
    store.answers.await_(hosts.values(), time.time())
    store.tally.expect(jobid, len(NODES))
    for node, shape in answers:
        kwargs = kwargs_of(shape, jobid, hosts[node], f"t{n}-{node}")
        store.client.xadd(store.keys.node_answers(hosts[node]), entry(app, kwargs))
    reader = AnswerReader(app, "lifecycle@test")
    try:
        reader.step(block_ms=None)
    finally:
        reader.lease.resign(reader.holder)  # the next example's reader leads
    assert store.answers.lengths(hosts.values()) == dict.fromkeys(hosts.values(), 0)
    proven = {hosts[node] for node, shape in answers if shape == "good"}
    assert store.tally.nodes(jobid, "prolog") == proven
    assert not store.client.exists(store.keys.tally(jobid + 10**9, "prolog"))

"""Node answers wait on their nodes' streams until a lifecycle worker counts them: ``status``
shows how many wait and since when, and flags CRITICAL once the oldest has waited past the
outbox's limit (its jobs stay held at RUN meanwhile) — naming the worker to start when no
reader has read lately, and the reader that fails to count them when one has. It names each
node whose answers were refused wholesale."""

from __future__ import annotations

import time
import uuid

from pipeline.cli.status_flags import CRITICAL, OUTBOX_LATE_S, WARNING, pipeline_flags
from pipeline.store import Store
from pipeline.store.report import pipeline_view


def old_answer(store: Store) -> int:
    """An answer of n1's appended past the outbox's limit ago (n1 awaited); when, in ms."""
    appended_ms = int((time.time() - OUTBOX_LATE_S - 5) * 1000)
    store.answers.await_(["n1"], time.time())
    store.client.xadd(store.keys.node_answers("n1"), {"task": "p"}, id=f"{appended_ms}-0")
    return appended_ms


def test_an_answer_left_uncounted_is_flagged_critical(redis_url: str) -> None:
    store = Store.from_url(redis_url, f"ans-{uuid.uuid4().hex[:8]}")
    appended_ms = old_answer(store)
    view = pipeline_view(store)
    assert view.answers_waiting == 1
    assert view.answers_oldest_at == appended_ms / 1000
    flags = [f for f in pipeline_flags(view, 120.0) if "node answer" in f.text]
    assert [f.severity for f in flags] == [CRITICAL]
    assert "no lifecycle worker has read the answers ever" in flags[0].text
    assert "coral2-pipeline worker" in flags[0].text


def test_a_reader_that_reads_but_counts_nothing_is_named(redis_url: str) -> None:
    store = Store.from_url(redis_url, f"ans-{uuid.uuid4().hex[:8]}")
    old_answer(store)
    store.answers.note_pass("worker1@mgmt:42", time.time())
    [flag] = [f for f in pipeline_flags(pipeline_view(store), 120.0) if "node answer" in f.text]
    assert flag.severity == CRITICAL
    assert "though the reader worker1@mgmt:42 read" in flag.text
    assert "its log says why" in flag.text


def test_answers_just_appended_are_not_flagged(redis_url: str) -> None:
    store = Store.from_url(redis_url, f"ans-{uuid.uuid4().hex[:8]}")
    store.answers.await_(["n1"], time.time())
    store.client.xadd(store.keys.node_answers("n1"), {"task": "job.prolog_done"})
    assert not [f for f in pipeline_flags(pipeline_view(store), 120.0) if "node answer" in f.text]


def test_a_node_whose_answers_were_refused_is_named(redis_url: str) -> None:
    store = Store.from_url(redis_url, f"ans-{uuid.uuid4().hex[:8]}")
    store.answers.flag("n7", "n7 wrote more than 1200 answers in a minute", time.time())
    [flag] = [f for f in pipeline_flags(pipeline_view(store), 120.0) if "n7" in f.text]
    assert flag.severity == WARNING
    assert "deadletters --clear-node n7" in flag.text
    store.answers.unflag("n7")
    assert not [f for f in pipeline_flags(pipeline_view(store), 120.0) if "n7" in f.text]

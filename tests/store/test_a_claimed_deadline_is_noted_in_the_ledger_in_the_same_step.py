"""A sweep that claims a deadline notes its ``timeouts.fire`` in the ledger in the same step.

The claim removes the deadline from the set; were the message noted only
afterwards, a sweeper killed in between would lose the deadline for good
(and a job waiting on it would wait forever). Noted by the claim itself,
the message is sent again by ``housekeeping.redeliver`` instead.
"""

from __future__ import annotations

from pipeline.store import Deadline, Store
from pipeline.store.deadlines import noted_id


def test_each_claimed_deadline_becomes_a_ledger_entry_due_after_the_resend_wait(
    store: Store,
) -> None:
    store.deadlines.add(Deadline(7, "setup_timeout", "setup_timeout@105.250", 105.25))
    store.deadlines.add(Deadline(8, "tc_timeout", "later", 500.0))
    [claimed] = store.deadlines.claim_due(150.0, note_as="timeouts.fire", resend_after_s=120.0)
    assert store.ledger.due(269.0) == []
    [entry] = store.ledger.due(270.0)
    assert entry.task_id == noted_id("timeouts.fire", claimed)
    assert entry.task_id == "timeouts.fire:7:setup_timeout:setup_timeout@105.250"
    assert (entry.name, entry.queue, entry.first_sent) == ("timeouts.fire", None, 150.0)
    assert entry.kwargs == {
        "jobid": 7,
        "kind": "setup_timeout",
        "token": "setup_timeout@105.250",
        "due": 105.25,
    }


def test_a_64_bit_jobid_is_noted_exactly(store: Store) -> None:
    jobid = 2**63 - 25  # Flux ids use all 64 bits; a JSON double would round this one
    store.deadlines.add(Deadline(jobid, "prerun_timeout", "t", 1.0))
    store.deadlines.claim_due(2.0, note_as="timeouts.fire", resend_after_s=1.0)
    [entry] = store.ledger.due(3.0)
    assert entry.kwargs["jobid"] == jobid


def test_a_claim_without_note_as_leaves_the_ledger_alone(store: Store) -> None:
    store.deadlines.add(Deadline(9, "tc_timeout", "t", 1.0))
    assert len(store.deadlines.claim_due(2.0)) == 1
    assert store.ledger.pending() == 0

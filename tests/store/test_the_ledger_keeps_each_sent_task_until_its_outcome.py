"""The ledger holds each sent task message until its outcome, and says when to send it again."""

from __future__ import annotations

from pipeline.store import Store
from pipeline.store.ledger import RESEND_CAP_S


def test_a_noted_message_falls_due_after_its_wait_and_not_before(store: Store) -> None:
    store.ledger.note("t1", "dws.setup", {"jobid": 7, "R": {}}, now=1000.0, resend_after_s=120)
    assert store.ledger.due(1119.0) == []
    [entry] = store.ledger.due(1120.0)
    assert (entry.task_id, entry.name, entry.kwargs) == ("t1", "dws.setup", {"jobid": 7, "R": {}})
    assert (entry.queue, entry.first_sent) == (None, 1000.0)
    assert store.ledger.pending() == 1


def test_a_message_with_an_outcome_is_never_due(store: Store) -> None:
    store.ledger.note("t2", "dws.teardown", {"jobid": 8}, now=0.0, resend_after_s=1)
    store.ledger.done("t2")
    store.ledger.postpone("t2", 5.0)  # a retry racing the outcome brings nothing back
    assert store.ledger.due(1e9) == []
    assert store.ledger.pending() == 0


def test_a_postponed_message_falls_due_at_its_new_time(store: Store) -> None:
    store.ledger.note("t3", "dws.observe", {"jobid": 9}, now=0.0, resend_after_s=10)
    store.ledger.postpone("t3", 50.0)
    assert store.ledger.due(49.0) == []
    assert [e.task_id for e in store.ledger.due(50.0)] == ["t3"]


def test_the_waits_between_sends_double_up_to_the_cap(store: Store) -> None:
    store.ledger.note("t4", "dws.create", {"jobid": 1}, now=0.0, resend_after_s=60)
    [entry] = store.ledger.due(60.0)
    assert entry.next_wait(60.0, 60) == 60.0  # sent at 0, again at 60, next at 120
    assert entry.next_wait(120.0, 60) == 120.0  # then at 240
    assert entry.next_wait(240.0, 60) == 240.0
    assert entry.next_wait(1e6, 60) == RESEND_CAP_S


def test_a_site_may_cap_the_waits_lower(store: Store) -> None:
    store.ledger.note("t6", "dws.create", {"jobid": 1}, now=0.0, resend_after_s=15)
    [entry] = store.ledger.due(15.0)
    assert entry.next_wait(15.0, 15, 30) == 15.0
    assert entry.next_wait(45.0, 15, 30) == 30.0  # not 45: the cap


def test_the_queue_of_a_node_task_is_kept(store: Store) -> None:
    store.ledger.note("t5", "node.prolog", {"jobid": 2}, now=0.0, resend_after_s=1, queue="node.c1")
    assert [e.queue for e in store.ledger.due(1.0)] == ["node.c1"]


def test_an_unreadable_entry_is_crossed_out_rather_than_sent(store: Store) -> None:
    store.ledger.note("t6", "dws.abort", {"jobid": 3}, now=0.0, resend_after_s=1)
    store.client.hset(store.keys.ledger, "t6", "{not json")
    assert store.ledger.due(10.0) == []
    assert store.ledger.pending() == 0


def test_a_report_lists_the_unsettled_entries_soonest_due_first_and_changes_nothing(
    store: Store,
) -> None:
    store.ledger.note("late", "dws.observe", {"jobid": 2}, now=50.0, resend_after_s=10)
    store.ledger.note("early", "dws.setup", {"jobid": 1}, now=0.0, resend_after_s=10)
    store.ledger.note("done", "dws.create", {"jobid": 3}, now=0.0, resend_after_s=10)
    store.ledger.done("done")
    assert [(e.task_id, e.kwargs) for e in store.ledger.unsettled()] == [
        ("early", {"jobid": 1}),
        ("late", {"jobid": 2}),
    ]
    assert [e.task_id for e in store.ledger.unsettled(limit=1)] == ["early"]
    assert store.ledger.pending() == 2

"""The outbox delivers each message until acknowledged; a dead consumer's are redelivered."""

from __future__ import annotations

import pytest

from pipeline.errors import InputError
from pipeline.store import OutboxMessage, Store

MEMO = OutboxMessage("memo", 42, {"rabbit_workflow": "fluxjob-42"})


def test_messages_arrive_in_order_with_their_payloads(store: Store) -> None:
    store.outbox.append(MEMO)
    store.outbox.append(
        OutboxMessage("prolog-remove", 42, {"id": 42, "variables": {"DW_JOB_x": "/mnt"}})
    )
    deliveries = store.outbox.read("bridge-1")
    assert [d.message for d in deliveries] == [
        MEMO,
        OutboxMessage("prolog-remove", 42, {"id": 42, "variables": {"DW_JOB_x": "/mnt"}}),
    ]
    assert all(d.attempt == 1 for d in deliveries)


def test_acknowledged_messages_are_gone(store: Store) -> None:
    store.outbox.append(MEMO)
    (delivery,) = store.outbox.read("bridge-1")
    store.outbox.ack(delivery.entry_id)
    assert store.outbox.backlog() == 0
    assert store.outbox.read("bridge-1", reclaim_idle_s=0) == []


def test_several_entries_are_acknowledged_at_once(store: Store) -> None:
    for jobid in (1, 2, 3):
        store.outbox.append(OutboxMessage("epilog-remove", jobid, {"id": jobid}))
    deliveries = store.outbox.read("bridge-1")
    store.outbox.ack(*(d.entry_id for d in deliveries[:2]))
    assert store.outbox.backlog() == 1
    (left,) = store.outbox.read("bridge-2", reclaim_idle_s=0)
    assert left.entry_id == deliveries[2].entry_id


def test_a_consumer_that_died_before_acking_has_its_messages_redelivered(store: Store) -> None:
    store.outbox.append(MEMO)
    first = store.outbox.read("bridge-dead")
    assert len(first) == 1
    again = store.outbox.read("bridge-new", reclaim_idle_s=0)
    assert [(d.entry_id, d.message, d.attempt) for d in again] == [(first[0].entry_id, MEMO, 2)]


def test_unacked_messages_are_not_handed_out_twice_while_fresh(store: Store) -> None:
    store.outbox.append(MEMO)
    assert len(store.outbox.read("a")) == 1
    assert store.outbox.read("b", reclaim_idle_s=60) == []


def test_unknown_kinds_are_refused_before_anything_is_written(store: Store) -> None:
    with pytest.raises(InputError, match="unknown outbox message kind 'bogus'"):
        store.outbox.append(OutboxMessage("bogus", 1, {}))
    assert store.outbox.backlog() == 0


def test_a_once_only_message_is_appended_once_however_often_it_is_sent(store: Store) -> None:
    message = OutboxMessage("prolog-remove", 42, {"id": 42, "variables": {}})
    first = store.outbox.append_once(message, "prolog-remove")
    assert first is not None
    assert store.outbox.append_once(message, "prolog-remove") is None
    assert store.marks.is_set(42, "prolog-remove")
    assert [d.message for d in store.outbox.read("bridge")] == [message]


def test_once_only_messages_of_a_job_go_together_in_order_each_at_most_once(
    store: Store,
) -> None:
    memo = OutboxMessage("memo", 42, {"id": 42, "memo": {"rabbits": "rabbit1"}})
    timing = OutboxMessage("kvs-put", 42, {"id": 42, "key": "rabbit_setup_timing", "value": 1})
    store.outbox.append_once(memo, "memo:rabbits")  # sent before, by an earlier run
    entries = store.outbox.append_all_once(42, [(memo, "memo:rabbits"), (timing, "timing:setup")])
    assert entries[0] is None and entries[1] is not None
    assert [d.message for d in store.outbox.read("bridge")] == [memo, timing]
    assert store.outbox.append_all_once(42, [(timing, "timing:setup")]) == [None]


def test_once_only_messages_of_another_job_are_refused_before_anything_is_written(
    store: Store,
) -> None:
    other = OutboxMessage("memo", 7, {"id": 7, "memo": {}})
    with pytest.raises(InputError, match="must all carry its jobid"):
        store.outbox.append_all_once(42, [(MEMO, "memo"), (other, "memo")])
    assert store.outbox.backlog() == 0

"""A Storage event's change of a rabbit's record is written only onto the record it was
decided on: if another writer (a job's hold, another observe) changed the record since,
nothing is sent and the task is told to decide again — no message decided on a stale
record reaches Flux, and the other writer's change is kept."""

from __future__ import annotations

import pytest

from pipeline.errors import StoreConflict
from pipeline.model.told import Change, Told
from pipeline.states.rabbits import RabbitPolicy, decide, hold
from pipeline.store import Store

PATHS = ["/elcap/chassis0/ssd0"]


def ready_pass(told: Told) -> Change:
    return decide("Ready", set(), ["c1"], PATHS, RabbitPolicy(), told, "1", "v1")


def test_a_change_onto_the_record_it_was_decided_on_is_sent_with_it(store: Store) -> None:
    before = store.told.get("rabbit0")
    change = ready_pass(before)
    store.told.replace("rabbit0", before, change)
    assert store.told.get("rabbit0") == change.told
    assert [m.kind for m in change.messages] == ["set-status"]
    assert store.outbox.backlog() == 1


def test_a_change_decided_before_a_hold_is_refused_and_the_hold_kept(store: Store) -> None:
    before = store.told.get("rabbit0")
    up = ready_pass(before)  # decided, not yet written
    store.told.change("rabbit0", lambda told: hold(told, "8", "1"))  # a job's hold comes between
    held = store.told.get("rabbit0")
    sent = store.outbox.backlog()
    with pytest.raises(StoreConflict, match="rabbit0"):
        store.told.replace("rabbit0", before, up)
    assert store.told.get("rabbit0") == held
    assert store.outbox.backlog() == sent
    again = ready_pass(held)  # what the task, run again, decides
    assert "8" in again.told.holders and again.told.ssd == "down"

"""The outbox acknowledges a delivered entry by deleting it, then acknowledging it, in one
round trip with no transaction. Should the connection drop between the two, the entry is
gone from the stream but still pending in the group: the next sweep of stale entries
drops it from the group, and nothing delivers it again."""

from __future__ import annotations

from pipeline.store import OutboxMessage, Store
from pipeline.store.outbox import GROUP


def test_the_stale_sweep_drops_an_entry_deleted_but_not_acknowledged(store: Store) -> None:
    store.outbox.append(OutboxMessage("epilog-remove", 7, {"id": 7}))
    (delivery,) = store.outbox.read("bridge-1")
    store.client.xdel(store.keys.outbox, delivery.entry_id)  # the XACK never arrived
    assert store.client.xpending(store.keys.outbox, GROUP)["pending"] == 1
    assert store.outbox.read("bridge-2", reclaim_idle_s=0) == []
    assert store.client.xpending(store.keys.outbox, GROUP)["pending"] == 0
    assert store.outbox.backlog() == 0

"""The marks that keep a message to Flux from being sent twice (``<prefix>:sent:<jobid>``)
expire within a month of their first write, so a hook for a job the pipeline never
tracks (``dws.setup`` of an unknown job sends its exception once) leaves no key behind
for ever; a later mark leaves the expiry as it is."""

from __future__ import annotations

from pipeline.store import OutboxMessage, Store

MONTH_S = 30 * 24 * 3600


def test_the_first_mark_sets_the_expiry_and_a_later_one_keeps_it(store: Store) -> None:
    message = OutboxMessage("exception", 99, {"id": 99, "type": "dws-setup", "note": "n"})
    assert store.outbox.append_once(message, "exception:dws-setup") is not None
    first = store.client.ttl(store.keys.marks(99))
    assert 0 < first <= MONTH_S  # type: ignore[operator]
    store.client.expire(store.keys.marks(99), 60)  # as a finished job's retention sets it
    memo = OutboxMessage("memo", 99, {"id": 99, "memo": {"x": 1}})
    assert store.outbox.append_once(memo, "memo:x") is not None
    assert 0 < store.client.ttl(store.keys.marks(99)) <= 60  # type: ignore[operator]

"""An outbox reader looks for entries a dead consumer left (XAUTOCLAIM) at its first read
and then every quarter of ``reclaim_idle_s``, not at every read: a stale entry is still
handed over within 1.25 times ``reclaim_idle_s``, and a busy reader pays one round trip per read."""

from __future__ import annotations

import time
from typing import Any

from pipeline.store import OutboxMessage, Store

MEMO = OutboxMessage("memo", 7, {"rabbit_workflow": "fluxjob-7"})


def _autoclaims(store: Store) -> int:
    stats: Any = store.client.info("commandstats")
    return int(stats.get("cmdstat_xautoclaim", {}).get("calls", 0))


def test_a_busy_reader_looks_once_per_quarter_idle_time(store: Store) -> None:
    before = _autoclaims(store)
    for _ in range(10):
        store.outbox.read("busy", reclaim_idle_s=60)
    assert _autoclaims(store) - before == 1


def test_a_stale_entry_is_handed_over_within_a_quarter_past_the_idle_time(
    store: Store,
) -> None:
    store.outbox.append(MEMO)
    (lost,) = store.outbox.read("dead", reclaim_idle_s=0.4)
    first_look = store.outbox.read("survivor", reclaim_idle_s=0.4)  # fresh, as a rule
    time.sleep(0.5)  # past 1.25 times 0.4 s
    again = first_look + store.outbox.read("survivor", reclaim_idle_s=0.4)
    assert [(d.entry_id, d.attempt) for d in again] == [(lost.entry_id, 2)]

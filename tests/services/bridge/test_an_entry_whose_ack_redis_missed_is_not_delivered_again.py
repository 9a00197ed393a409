"""Redis goes down after the bridge delivered an outbox entry and before it acknowledged
it. The bridge owes the acknowledgement and pays it before it reads again, so the entry
is delivered to Flux once, not a second time when Redis is back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from coral2_sim.redis_server import RedisServer

from pipeline.errors import StoreUnavailable
from pipeline.services.bridge.delivery import Deliverer
from pipeline.store import Store
from pipeline.store.outbox import OutboxMessage


class Flux:
    """Takes every request; the first one also stops Redis (a crash mid-delivery)."""

    def __init__(self, redis: RedisServer) -> None:
        self.redis = redis
        self.rpcs: list[tuple[str, dict[str, Any]]] = []

    def rpc(self, topic: str, payload: dict[str, Any], nodeid: int = 0) -> dict[str, Any]:
        self.rpcs.append((topic, payload))
        if len(self.rpcs) == 1:
            self.redis.stop()
        return {}

    def kvs_put(self, jobid: int, key: str, value: Any) -> None:
        self.rpcs.append(("kvs", {"id": jobid, key: value}))


def test_the_entry_is_delivered_once_across_the_outage(tmp_path: Path) -> None:
    with RedisServer(tmp_path, aof=True) as redis:
        store = Store.from_url(redis.url, "owed")
        try:
            store.outbox.append(OutboxMessage("epilog-remove", 5, {"id": 5}))
            flux = Flux(redis)
            deliverer = Deliverer(store.outbox, flux, "c1", lambda host: host)
            with pytest.raises(StoreUnavailable):
                deliverer.run_once()
            assert deliverer.owed_acks
            with pytest.raises(StoreUnavailable):  # still down: still owed, nothing read
                deliverer.run_once()
            redis.start()
            store.outbox.append(OutboxMessage("epilog-remove", 6, {"id": 6}))
            deliverer.run_once()
            assert [p["id"] for _, p in flux.rpcs] == [5, 6]
            assert store.outbox.backlog() == 0 and not deliverer.owed_acks
        finally:
            store.client.close()

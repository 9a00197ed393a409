"""A bridge dies between a delivery and its acknowledgement: the entry stays pending, and
the bridge that starts in its place reclaims it. An entry Flux took (its mark is in the
job's eventlog) is not delivered again — no second exception, no second epilog release, no
second KVS put of a value the job's KVS holds — and one Flux never got is delivered."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from coral2_sim.redis_server import RedisServer

from pipeline.errors import FluxError
from pipeline.model.eventlog import EventlogEntry
from pipeline.services.bridge.delivery import Deliverer
from pipeline.store import Store
from pipeline.store.outbox import OutboxMessage


class Flux:
    """Takes requests and posts their events to the job's eventlog, as the job manager and
    dws-jobtap do for the two kinds used here."""

    def __init__(self) -> None:
        self.rpcs: list[tuple[str, dict[str, Any]]] = []
        self.events: dict[int, list[EventlogEntry]] = {5: [], 6: []}
        self.kvs: dict[int, dict[str, Any]] = {5: {}, 6: {}}

    def rpc(self, topic: str, payload: dict[str, Any], nodeid: int = 0) -> dict[str, Any]:
        self.rpcs.append((topic, payload))
        if topic == "job-manager.raise":
            context = {k: payload[k] for k in ("type", "severity", "note")}
            self._post(payload["id"], "exception", context)
        elif topic == "job-manager.dws.epilog-remove":
            self._post(payload["id"], "epilog-finish", {"description": "dws-epilog", "status": 0})
        return {}

    def _post(self, jobid: int, name: str, context: dict[str, Any]) -> None:
        self.events[jobid].append(EventlogEntry(timestamp=time.time(), name=name, context=context))

    def kvs_put(self, jobid: int, key: str, value: Any) -> None:
        self.rpcs.append(("kvs", {"id": jobid, key: value}))
        self.kvs[jobid][key] = value

    def kvs_get(self, jobid: int, key: str) -> tuple[bool, Any]:
        return key in self.kvs[jobid], self.kvs[jobid].get(key)

    def eventlog(self, jobid: int) -> list[EventlogEntry]:
        if jobid not in self.events:
            raise FluxError(f"job {jobid} not found")
        return list(self.events[jobid])


def test_what_flux_took_is_not_delivered_again_and_what_it_did_not_is(tmp_path: Path) -> None:
    exception = {"id": 5, "type": "dws", "severity": 0, "note": "DWS/Rabbit interactions failed"}
    timing = {"key": "rabbit_setup_timing", "value": "1.5s"}
    with RedisServer(tmp_path) as redis:
        store = Store.from_url(redis.url, "killed")
        store.outbox.append(OutboxMessage("exception", 5, exception))
        store.outbox.append(OutboxMessage("epilog-remove", 5, {"id": 5}))
        store.outbox.append(OutboxMessage("kvs-put", 5, timing))
        store.outbox.append(OutboxMessage("epilog-remove", 6, {"id": 6}))
        store.outbox.append(OutboxMessage("kvs-put", 6, timing))
        flux = Flux()
        # the first bridge reads all five, Flux takes the first three, and it dies
        read = store.outbox.read("bridge", count=5)
        for delivery in read[:3]:
            assert delivery.message is not None
            Deliverer(store.outbox, flux, "bridge", str).deliver(delivery.message)
        assert len(flux.rpcs) == 3
        time.sleep(0.3)
        restarted = Deliverer(store.outbox, flux, "bridge", str, reclaim_idle_s=0.2)
        assert restarted.run_once() == 5
        assert flux.rpcs[3:] == [
            ("job-manager.dws.epilog-remove", {"id": 6}),
            ("kvs", {"id": 6, "rabbit_setup_timing": "1.5s"}),
        ]
        assert store.outbox.backlog() == 0

"""The bridge mirrors Flux's resource journal into the pipeline's eventlog: every event
once, R with resource-define; a restarted bridge, sent the history again, adds nothing it
already has; events wait in order while Redis is away; a bad event is skipped."""

from __future__ import annotations

from typing import Any

import redis
from coral2_sim.redis_server import free_port

from pipeline.services.bridge.resources import ResourceMirror
from pipeline.store import Store

R = {
    "version": 1,
    "execution": {"R_lite": [], "nodelist": ["n[0-1]"], "starttime": 0, "expiration": 0},
}


def event(t: float, name: str, **context: Any) -> dict[str, Any]:
    return {"timestamp": t, "name": name, "context": context}


HISTORY = [
    {"events": [event(1, "restart", ranks="0-1", online="", nodelist="n[0-1]")]},
    {"events": [event(2, "resource-define", method="configuration")], "R": R},
    {
        "events": [
            event(3, "online", idset="0-1"),
            event(4, "drain", idset="1", nodelist="n1", overwrite=0),
        ]
    },
]


def test_every_event_is_mirrored_once_even_by_a_restarted_bridge(store: Store) -> None:
    first = ResourceMirror(store.resource_log)
    for response in [*HISTORY, {"events": []}, {"events": [event(5, "offline", idset="0")]}]:
        first.feed(response)
    assert [e["name"] for e in store.resource_log.events()] == [
        "restart", "resource-define", "online", "drain", "offline",
    ]  # fmt: skip
    assert store.resource_log.r() == R
    again = ResourceMirror(store.resource_log)  # the bridge restarts: the history comes again
    for response in [*HISTORY, {"events": [event(5, "offline", idset="0")]}, {"events": []}]:
        again.feed(response)
    again.feed({"events": [event(6, "undrain", idset="1", nodelist="n1")]})
    assert [e["timestamp"] for e in store.resource_log.events()] == [1, 2, 3, 4, 5, 6]


def test_events_wait_in_order_while_redis_is_away(store: Store) -> None:
    nowhere = redis.Redis(port=free_port(), socket_connect_timeout=0.5)  # nothing listens
    mirror = ResourceMirror(Store(nowhere, store.keys).resource_log)
    mirror.feed({"events": []})
    mirror.feed({"events": [event(7, "offline", idset="0"), event(8, "online", idset="0")]})
    assert len(mirror.pending) == 2
    mirror.eventlog = store.resource_log  # Redis is back
    assert mirror.flush() == 0
    assert [e["timestamp"] for e in store.resource_log.events()] == [7, 8]


def test_an_event_that_breaks_rfc_44_is_skipped(store: Store) -> None:
    mirror = ResourceMirror(store.resource_log)
    mirror.feed({"events": []})
    mirror.feed({"events": [event(9, "drain", idset="0"), event(10, "online", idset="1")]})
    assert [e["name"] for e in store.resource_log.events()] == ["online"]

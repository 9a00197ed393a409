"""flux-core 0.88 heads a resource journal that dropped its oldest events with a
``truncate`` event (its context left out). The bridge's mirror skips one that loses
nothing it has; one newer than what it has marks a gap: it is mirrored, with the
instance's nodelist, and the SystemStatus sync takes the ranks' hostnames from it when
the ``restart`` that named them was dropped."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from pipeline.services.bridge.resources import ResourceMirror
from pipeline.states.systemstatus import Seen, follow
from pipeline.store import Store


def event(t: float, name: str, **context: Any) -> dict[str, Any]:
    return {"timestamp": t, "name": name, "context": context}


TRUNCATE = {"timestamp": 7.0, "name": "truncate"}  # as flux-core writes it: no context
AFTER = [event(8, "online", idset="0-1"), event(9, "offline", idset="1")]


def test_a_truncate_that_loses_nothing_mirrored_is_skipped(store: Store) -> None:
    mirror = ResourceMirror(store.resource_log, hostlist="n[0-1]")
    mirror.feed({"events": [event(7, "restart", ranks="0-1", online="", nodelist="n[0-1]")]})
    again = ResourceMirror(store.resource_log, hostlist="n[0-1]")  # the bridge restarts
    for response in ({"events": [TRUNCATE, *AFTER]}, {"events": []}):
        again.feed(response)
    names = [e["name"] for e in store.resource_log.events()]
    assert names == ["restart", "online", "offline"]


def test_a_truncate_past_the_mirror_is_kept_with_the_nodelist(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="coral2_pipeline.bridge")
    mirror = ResourceMirror(store.resource_log, hostlist="n[0-1]")
    for response in ({"events": [TRUNCATE, *AFTER]}, {"events": []}):
        mirror.feed(response)
    events = store.resource_log.events()
    assert events[0] == {"timestamp": 7.0, "name": "truncate", "context": {"nodelist": "n[0-1]"}}
    assert events[1:] == AFTER
    assert "were never mirrored here" in caplog.text


def test_the_systemstatus_sync_names_hosts_from_the_truncate(store: Store) -> None:
    mirror = ResourceMirror(store.resource_log, hostlist="n[0-1]")
    for response in ({"events": [TRUNCATE, *AFTER]}, {"events": []}):
        mirror.feed(response)
    patch, _, _ = follow(store.resource_log.events(), Seen([], set(), set()))
    assert patch == {"n0": "Enabled", "n1": "Disabled"}


def test_without_a_nodelist_the_truncate_is_kept_as_flux_wrote_it(store: Store) -> None:
    mirror = ResourceMirror(store.resource_log)
    mirror.feed({"events": [TRUNCATE]})
    assert store.resource_log.events() == [{"timestamp": 7.0, "name": "truncate", "context": {}}]

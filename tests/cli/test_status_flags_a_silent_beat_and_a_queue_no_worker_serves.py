"""`coral2-pipeline status` flags as CRITICAL a beat that has not ticked (dead, or frozen)
and a queue whose heartbeat no worker has taken, and names the beat that leads."""

from __future__ import annotations

import time

from pipeline.store import Store
from tests.cli.status_helpers import Status, as_json


def healthy(store: Store, beat_age_s: float = 0.0) -> None:
    store.client.set(store.keys.watcher_leader, "watcher-a", px=60_000)
    store.client.set(store.keys.beat_tick, f"{time.time() - beat_age_s} vm:4242:ab12")


def test_a_beat_that_never_ticked_is_flagged(status: Status, aimed: Store) -> None:
    aimed.client.set(aimed.keys.watcher_leader, "watcher-a", px=60_000)
    code, report = as_json(status)
    assert code == 2 and report["status"] == "CRITICAL"
    assert any("beat has not ticked ever" in flag for flag in report["critical"])


def test_a_frozen_beat_is_flagged_with_its_name(status: Status, aimed: Store) -> None:
    healthy(aimed, beat_age_s=120)
    code, report = as_json(status)
    assert code == 2
    [flag] = report["critical"]
    assert "beat has not ticked for 120 s (last: vm:4242:ab12)" in flag


def test_a_queue_whose_heartbeat_no_worker_took_is_flagged(status: Status, aimed: Store) -> None:
    healthy(aimed)
    now = time.time()
    aimed.client.hset(aimed.keys.alive, mapping={"lifecycle": now - 5, "timeouts": now - 300})
    code, report = as_json(status)
    assert code == 2
    [flag] = report["critical"]
    assert "no worker has taken work from queue timeouts for 300 s" in flag


def test_a_ticking_beat_and_served_queues_are_shown_and_not_flagged(
    status: Status, aimed: Store
) -> None:
    healthy(aimed)
    aimed.client.hset(aimed.keys.alive, mapping={"lifecycle": time.time()})
    code, out, _ = status()
    assert code == 0
    assert "vm:4242:ab12, ticked" in out
    assert "lifecycle" in out

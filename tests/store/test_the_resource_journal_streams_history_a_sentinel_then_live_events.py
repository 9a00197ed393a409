"""The resource journal in Redis, as flux-core 0.88 streams it: the history in batches,
``resource-define`` alone with R, one sentinel (an empty ``events`` array), then live
events until the consumer cancels; past ``journal-max`` events, a leading ``truncate``
stamped with the last event left out; a bad event is refused whole; compaction keeps the
replay."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pipeline.model.resource_events import ResourceEventError
from pipeline.store import Store
from pipeline.store import resource_log as module

R = {
    "version": 1,
    "execution": {
        "R_lite": [{"rank": "0-3", "children": {"core": "0"}}],
        "nodelist": ["n[0-3]"],
        "starttime": 0.0,
        "expiration": 0.0,
    },
}


def restart(t: float) -> dict[str, Any]:
    return {
        "timestamp": t,
        "name": "restart",
        "context": {"ranks": "0-3", "online": "", "nodelist": "n[0-3]"},
    }


def drain(t: float, rank: int, overwrite: int = 0) -> dict[str, Any]:
    return {
        "timestamp": t,
        "name": "drain",
        "context": {
            "idset": str(rank),
            "nodelist": f"n{rank}",
            "overwrite": overwrite,
            "reason": f"r{t:g}",
        },
    }


def online(t: float, idset: str) -> dict[str, Any]:
    return {"timestamp": t, "name": "online", "context": {"idset": idset}}


def test_history_comes_in_batches_then_the_sentinel_then_live_events(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module, "BATCH", 2)
    log = store.resource_log
    log.post(
        restart(1.0),
        {"timestamp": 1.0, "name": "resource-define", "context": {"method": "configuration"}},
        r=R,
    )
    log.post(online(2.0, "0-3"), drain(3.0, 1))
    cancel = threading.Event()
    journal = log.journal(cancel, block_ms=50)
    first, define, second = next(journal), next(journal), next(journal)
    assert [e["name"] for e in first["events"]] == ["restart"]
    assert [e["name"] for e in define["events"]] == ["resource-define"]
    assert define["R"] == R
    assert [e["name"] for e in second["events"]] == ["online", "drain"]
    assert "R" not in first and "R" not in second
    assert next(journal) == {"events": []}  # the sentinel
    log.post(online(4.0, "2"))
    assert next(journal)["events"] == [online(4.0, "2")]
    cancel.set()
    assert list(journal) == []


def test_a_batch_with_a_bad_event_posts_nothing(store: Store) -> None:
    log = store.resource_log
    with pytest.raises(ResourceEventError, match="'drain': context key 'overwrite' is required"):
        log.post(
            drain(1.0, 0),
            {"timestamp": 2.0, "name": "drain", "context": {"idset": "1", "nodelist": "n1"}},
        )
    assert log.length() == 0


def test_the_latest_restart_names_the_flux_incarnation(store: Store) -> None:
    log = store.resource_log
    assert log.epoch() == ""
    log.post(restart(10.5))
    log.post(restart(20.25), online(20.5, "0"))
    assert log.epoch() == "20.25"


def test_compaction_keeps_the_drains_and_drops_the_rest(store: Store) -> None:
    log = store.resource_log
    log.post(restart(1.0), online(1.0, "0-3"))
    for t in range(2, 50):
        log.post(drain(float(t), t % 4, overwrite=t % 3))
    before = log.drained("n[0-3]")
    count, after = log.compact()
    assert (count, log.length()) == (50, after)
    assert after <= 5
    assert log.drained("n[0-3]") == before
    assert log.events(persistent_only=True) == log.events()


def test_journal_only_events_are_not_replayed(store: Store) -> None:
    log = store.resource_log
    log.post(restart(1.0), online(2.0, "0-3"), drain(3.0, 2))
    assert [e["name"] for e in log.events(persistent_only=True)] == ["restart", "drain"]
    assert log.since("0")[1][1] == online(2.0, "0-3")


def test_a_history_past_journal_max_starts_with_a_truncate(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module, "RESPONSE_EVENTS", 3)
    log = store.resource_log
    log.post(restart(1.0), online(2.0, "0-3"))
    log.post(*(drain(float(t), t % 4, overwrite=1) for t in range(3, 10)))  # 9 events in all
    cancel = threading.Event()
    responses = []
    for response in log.journal(cancel, block_ms=50, journal_max=5):
        if not response["events"]:
            break
        responses.append(response["events"])
    cancel.set()
    # flux-core's reslog_truncate: the newest journal-max - 1 events, after a truncate
    # stamped with the last one dropped, and no context
    assert [len(batch) for batch in responses] == [3, 2]
    events = [e for batch in responses for e in batch]
    assert events[0] == {"timestamp": 5.0, "name": "truncate"}
    assert [e["timestamp"] for e in events[1:]] == [6.0, 7.0, 8.0, 9.0]


def test_a_journal_within_journal_max_has_no_truncate(store: Store) -> None:
    log = store.resource_log
    log.post(restart(1.0), online(2.0, "0-3"), drain(3.0, 1))
    names = [e["name"] for e in next(log.journal(journal_max=3))["events"]]
    assert names == ["restart", "online", "drain"]

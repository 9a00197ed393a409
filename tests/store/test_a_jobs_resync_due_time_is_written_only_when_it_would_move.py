"""The watcher notes every Workflow event of a job, and puts the job in ``resync-due`` at
the time its event would count as lost. Every writer there only lowers a due time, and
``dws.resync`` moves one only once it is due: so while the due time this watcher wrote
still stands ahead, a later event's due time could not move it, and is not written — one
Redis command fewer an event. Once it has come due (``dws.resync`` may have moved it, or
dropped it), the next event writes it again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from coral2_sim.redis_server import RedisServer

from pipeline.store import Store
from pipeline.store.resync import LOST_AFTER_S, Notes
from pipeline.store.watch import STANDING_S, WatchState

T = 1_000_000.0


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server of this file's own, whose command counts are this file's alone."""
    server = RedisServer(tmp_path_factory.mktemp("own-redis")).start()
    yield server.url
    server.stop()


def zadds(store: Store) -> int:
    stats: dict[str, Any] = store.client.info("commandstats")
    return int(stats.get("cmdstat_zadd", {}).get("calls", 0))


def note(watch: WatchState, jobid: int, rv: str, at: float) -> None:
    watch.note_workflow(jobid, f"{rv} {at}", at, wanted=False, checkpoint=None)


def test_events_before_the_due_time_write_it_once(store: Store) -> None:
    watch = WatchState(store.client, store.keys)
    before = zadds(store)
    note(watch, 41, "1", T)
    note(watch, 41, "2", T + 1)
    note(watch, 41, "3", T + LOST_AFTER_S - 2 * STANDING_S)
    assert zadds(store) - before == 1
    assert store.client.zscore(store.keys.resync_due, "41") == T + LOST_AFTER_S


def test_an_event_once_the_due_time_came_writes_it_again(store: Store) -> None:
    watch = WatchState(store.client, store.keys)
    note(watch, 42, "1", T)
    # dws.resync at the due time: that event was observed, nothing more can come due
    seen = store.resync.notes([42])[42].seen
    assert seen
    assert store.resync.settle([(42, Notes(True, seen, "", ""), None)]) == 1
    assert store.client.zscore(store.keys.resync_due, "42") is None
    note(watch, 42, "2", T + LOST_AFTER_S + 1)
    assert store.client.zscore(store.keys.resync_due, "42") == T + 2 * LOST_AFTER_S + 1


def test_another_watcher_writes_its_own_first_due_time(store: Store) -> None:
    note(WatchState(store.client, store.keys), 43, "1", T)
    store.client.zrem(store.keys.resync_due, "43")  # as if it never reached Redis
    note(WatchState(store.client, store.keys), 43, "2", T + 1)  # a new leader
    assert store.client.zscore(store.keys.resync_due, "43") == T + 1 + LOST_AFTER_S

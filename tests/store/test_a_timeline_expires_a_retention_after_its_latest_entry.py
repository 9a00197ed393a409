"""A job's timeline expires ``retention`` after its latest entry, as its record does; a
process sets that expiry with its first entry and then only once a tenth of the retention
(an hour at most) has passed, so that an entry costs Redis one command, not two."""

from __future__ import annotations

from pipeline.store import Store
from pipeline.store.timeline import Timeline


def test_the_first_entry_sets_the_timelines_expiry(store: Store) -> None:
    timeline = Timeline(store.client, store.keys, retention_s=100)
    timeline.note(1, "task", "job.run")
    assert 90 < store.client.ttl(store.keys.timeline(1)) <= 100


def test_a_process_sets_it_again_only_once_a_tenth_of_the_retention_passed(
    store: Store,
) -> None:
    timeline = Timeline(store.client, store.keys, retention_s=100)
    timeline.note(2, "task", "job.run")
    store.client.expire(store.keys.timeline(2), 5)  # as if the hour had gone by
    timeline.note(2, "task", "job.prologs")
    assert store.client.ttl(store.keys.timeline(2)) <= 5  # within the tenth: left alone
    other = Timeline(store.client, store.keys, retention_s=100)  # another process
    other.note(2, "dws", "PreRun")
    assert store.client.ttl(store.keys.timeline(2)) > 90
    assert [e.what for e in other.read(2)] == ["job.run", "job.prologs", "PreRun"]

"""Job records round-trip as JSON and concurrent updates are never lost."""

from __future__ import annotations

import threading

from pipeline.store import JobRecord, Store


def test_a_record_is_created_once_and_read_back(store: Store) -> None:
    record = JobRecord(jobid=42, userid=1000, hosts=["c1", "c2"], failure_tolerance=1)
    assert store.jobs.create(record) is True
    assert store.jobs.create(record.model_copy(update={"userid": 7})) is False
    assert store.jobs.get(42) == record
    assert store.jobs.jobids() == [42]


def test_missing_records_read_as_none_and_are_not_created_by_update(store: Store) -> None:
    assert store.jobs.get(1) is None
    assert store.jobs.update(1, lambda r: r) is None
    assert store.jobs.get(1) is None


def test_an_update_bumps_the_version_and_a_no_op_does_not(store: Store) -> None:
    store.jobs.create(JobRecord(jobid=5))
    updated = store.jobs.update(5, lambda r: r.model_copy(update={"state": "Setup"}))
    assert updated is not None
    assert (updated.state, updated.version) == ("Setup", 1)
    unchanged = store.jobs.update(5, lambda r: None)
    assert unchanged is not None
    assert unchanged.version == 1


def test_concurrent_writers_never_lose_an_update(store: Store) -> None:
    store.jobs.create(JobRecord(jobid=9))
    writers, per_writer = 6, 40

    def add(name: str) -> None:
        for i in range(per_writer):
            node = f"{name}-{i}"
            store.jobs.update(
                9, lambda r, n=node: r.model_copy(update={"failed_nodes": [*r.failed_nodes, n]})
            )

    threads = [threading.Thread(target=add, args=(f"w{w}",)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    record = store.jobs.get(9)
    assert record is not None
    assert len(record.failed_nodes) == writers * per_writer
    assert len(set(record.failed_nodes)) == writers * per_writer
    assert record.version == writers * per_writer


def test_deleting_forgets_the_record(store: Store) -> None:
    store.jobs.create(JobRecord(jobid=3))
    store.jobs.delete(3)
    store.jobs.delete(3)
    assert store.jobs.get(3) is None
    assert store.jobs.jobids() == []


def test_each_records_last_observe_is_read_without_reading_the_records(store: Store) -> None:
    store.jobs.create(JobRecord(jobid=11, observed_rv="7", observed_at=100.5))
    store.jobs.create(JobRecord(jobid=12))
    store.jobs.update(
        12, lambda r: r.model_copy(update={"observed_rv": "9", "observed_at": 200.25})
    )
    store.jobs.create(JobRecord(jobid=13))
    store.jobs.finish(13, retain_s=60)  # no longer tracked
    assert store.jobs.observed() == {11: ("7", 100.5), 12: ("9", 200.25)}


def test_a_finished_job_updated_later_does_not_come_back_to_the_observed_hash(
    store: Store,
) -> None:
    store.jobs.create(JobRecord(jobid=14))
    store.jobs.finish(14, retain_s=60)
    store.jobs.update(14, lambda r: r.model_copy(update={"observed_rv": "3", "deleted": True}))
    assert not store.client.hexists(store.keys.observed, "14")

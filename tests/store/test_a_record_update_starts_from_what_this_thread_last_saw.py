"""Within a thread, a job-record update starts from the record as that thread last read or
wrote it — no read of its own — and the compare-and-set still loses nothing to others."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis
from coral2_sim.redis_server import RedisServer

from pipeline.store import JobRecord, Store


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server of this file's own, whose MONITOR shows this file's commands alone."""
    server = RedisServer(tmp_path_factory.mktemp("own-redis")).start()
    yield server.url
    server.stop()


def reads(store: Store, jobid: int, action: Callable[[], object]) -> int:
    """How many GETs of ``jobid``'s record clients send while ``action`` runs, as the
    server's MONITOR shows them (a script's own GET is the script's, not a client's)."""
    key = store.keys.job(jobid)
    marker = f"done-{uuid.uuid4().hex}"
    with store.client.monitor() as monitor:
        store.client.echo("monitoring")  # the monitor is listening from here on
        while "monitoring" not in monitor.next_command()["command"]:
            pass
        action()
        store.client.echo(marker)
        seen = 0
        while marker not in (command := monitor.next_command())["command"]:
            if command["client_type"] != "lua" and command["command"] == f"GET {key}":
                seen += 1
    return seen


def note(state: str) -> object:
    return lambda r: r.model_copy(update={"state": state})


def test_an_update_after_this_threads_own_write_reads_nothing(store: Store) -> None:
    store.jobs.create(JobRecord(jobid=1))
    store.jobs.update(1, note("Proposal"))
    updated: list[JobRecord | None] = []
    assert reads(store, 1, lambda: updated.append(store.jobs.update(1, note("Setup")))) == 0
    (updated_record,) = updated
    assert updated_record is not None and updated_record.state == "Setup"
    assert store.jobs.get(1) == updated_record


def test_a_change_someone_else_made_meanwhile_is_kept(store: Store, redis_url: str) -> None:
    other = Store(redis.Redis.from_url(redis_url), store.keys)  # another process
    store.jobs.create(JobRecord(jobid=2))
    store.jobs.update(2, note("Proposal"))
    other.jobs.update(2, lambda r: r.model_copy(update={"failed_nodes": ["c1"]}))
    updated = store.jobs.update(2, note("Setup"))
    assert updated is not None
    assert (updated.state, updated.failed_nodes) == ("Setup", ["c1"])
    other.client.close()


def test_nothing_to_change_is_confirmed_against_the_stored_record(
    store: Store, redis_url: str
) -> None:
    other = Store(redis.Redis.from_url(redis_url), store.keys)
    store.jobs.create(JobRecord(jobid=3))  # this thread now knows it with no deadlines
    other.jobs.update(3, lambda r: r.model_copy(update={"deadlines": {"setup": "t1"}}))

    def disarm(record: JobRecord) -> JobRecord | None:
        if "setup" not in record.deadlines:
            return None  # as the remembered copy says: nothing to do
        return record.model_copy(update={"deadlines": {}})

    store.jobs.update(3, disarm)
    stored = store.jobs.get(3)
    assert stored is not None and stored.deadlines == {}
    other.client.close()


def test_a_record_deleted_meanwhile_is_not_brought_back(store: Store, redis_url: str) -> None:
    other = Store(redis.Redis.from_url(redis_url), store.keys)
    store.jobs.create(JobRecord(jobid=4))
    other.jobs.delete(4)
    assert store.jobs.update(4, note("Setup")) is None
    assert store.jobs.get(4) is None
    other.client.close()


def test_another_thread_reads_for_itself(store: Store) -> None:
    store.jobs.create(JobRecord(jobid=5))  # known to this thread only
    counts: list[int] = []

    def elsewhere() -> None:
        counts.append(reads(store, 5, lambda: store.jobs.update(5, note("Setup"))))

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert counts == [1]


def test_starting_afresh_forgets_what_the_thread_knew(store: Store) -> None:
    store.jobs.create(JobRecord(jobid=6))
    store.jobs.start_known()
    assert reads(store, 6, lambda: store.jobs.update(6, note("Setup"))) == 1


def test_the_latest_record_is_the_one_the_task_read_with_its_lock_without_a_read(
    store: Store,
) -> None:
    store.jobs.create(JobRecord(jobid=7, state="PreRun:ready"))
    raw = store.client.get(store.keys.job(7))  # as a task's start reads it with the lock
    store.jobs.start_known(7, raw)
    found: list[JobRecord | None] = []
    assert reads(store, 7, lambda: found.append(store.jobs.latest(7))) == 0
    assert found[0] is not None and found[0].state == "PreRun:ready"


def test_the_latest_record_of_a_job_this_thread_does_not_know_is_read(store: Store) -> None:
    store.jobs.create(JobRecord(jobid=8, state="Setup:ready"))
    store.jobs.start_known()  # a new task: it knows nothing yet
    found: list[JobRecord | None] = []
    assert reads(store, 8, lambda: found.append(store.jobs.latest(8))) == 1
    assert found[0] is not None and found[0].state == "Setup:ready"
    store.jobs.start_known()
    assert store.jobs.latest(9) is None  # no record: read, and None

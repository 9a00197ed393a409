"""A copy of a task that runs after its job finished (a node's late answer, ``dws.abort``
or ``job.cleanup`` behind a loaded worker) may still write the retained record, but never
makes the job tracked again: its create does nothing and its updates keep it out of the
index, so no finished job waits for ever in the tracked set."""

from __future__ import annotations

from pipeline.store import JobRecord, Store


def test_create_and_update_after_finish_leave_the_job_untracked(store: Store) -> None:
    store.jobs.create(JobRecord(jobid=81, workflow="fluxjob-81"))
    store.jobs.finish(81, retain_s=60)
    assert not store.jobs.create(JobRecord(jobid=81))
    store.jobs.update(81, lambda r: r.model_copy(update={"state": "late"}))
    store.jobs.update(82, lambda r: r, default=JobRecord(jobid=82))  # a job never finished
    assert store.jobs.jobids() == [82]
    record = store.jobs.get(81)
    assert record is not None and record.state == "late"


def test_a_record_whose_index_entry_was_lost_is_tracked_again(store: Store) -> None:
    store.jobs.create(JobRecord(jobid=83, workflow="fluxjob-83"))
    store.client.srem(store.keys.jobs_index, 83)  # as a crash between the two would leave it
    store.jobs.create(JobRecord(jobid=83))
    assert store.jobs.jobids() == [83]

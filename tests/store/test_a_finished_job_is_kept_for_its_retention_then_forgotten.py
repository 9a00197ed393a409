"""A finished job leaves the tracked set at once; its record and marks outlive it by the
retention period (updates meanwhile do not extend it), then Redis forgets them."""

from __future__ import annotations

import time

from pipeline.store import JobRecord, Store


def test_finish_untracks_the_job_and_expires_its_record_and_marks(store: Store) -> None:
    store.jobs.create(JobRecord(jobid=71, workflow="fluxjob-71"))
    store.jobs.create(JobRecord(jobid=72, workflow="fluxjob-72"))
    assert store.marks.once(71, "epilog-remove")
    store.jobs.finish(71, retain_s=0.5)
    store.jobs.finish(71, retain_s=0.5)  # idempotent
    assert store.jobs.jobids() == [72]
    assert [r.jobid for r in store.jobs.records()] == [72]
    store.jobs.update(71, lambda r: r.model_copy(update={"state": "deleted"}))
    assert 0 < store.client.pttl(store.keys.job(71)) <= 500  # the update kept the expiry
    assert store.marks.is_set(71, "epilog-remove")  # a late duplicate still sends nothing
    time.sleep(0.7)
    assert store.jobs.get(71) is None
    assert not store.marks.is_set(71, "epilog-remove")
    assert store.client.pttl(store.keys.job(72)) == -1  # the tracked job never expires

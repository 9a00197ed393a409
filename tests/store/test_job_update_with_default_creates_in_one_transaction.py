"""`JobStore.update(..., default=...)`: create-or-update of a job record in one transaction."""

from __future__ import annotations

from pipeline.store import JobRecord, Store


def test_update_with_a_default_creates_the_missing_record_and_indexes_it(store: Store) -> None:
    made = store.jobs.update(
        71, lambda r: r.model_copy(update={"state": "Proposal:ready"}), default=JobRecord(jobid=71)
    )
    assert made is not None and made.state == "Proposal:ready"
    assert store.jobs.get(71) == made
    assert 71 in store.jobs.jobids()


def test_update_with_a_default_changes_an_existing_record_and_ignores_the_default(
    store: Store,
) -> None:
    store.jobs.create(JobRecord(jobid=72, workflow="fluxjob-72"))
    changed = store.jobs.update(
        72, lambda r: r.model_copy(update={"state": "Setup:ready"}), default=JobRecord(jobid=72)
    )
    assert changed is not None
    assert (changed.workflow, changed.state) == ("fluxjob-72", "Setup:ready")


def test_update_without_a_default_still_leaves_a_missing_record_missing(store: Store) -> None:
    assert store.jobs.update(73, lambda r: r) is None
    assert store.jobs.get(73) is None
    assert 73 not in store.jobs.jobids()

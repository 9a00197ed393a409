"""Two management hosts whose clocks disagree for a moment (one already stepped an hour
forward, the other not yet) write due times in turn, each moving every due time into its
own clock's frame. A sweep at the stepped clock takes the step in the same Redis step as
its claim, so a due time written meanwhile at the old clock never fires early: before, a
sweep that rebased, then claimed in a second step, fired every deadline of the coming hour
(a 300-job chaos run with clock steps failed 20 jobs with "timed out waiting for mounts")."""

from __future__ import annotations

from pipeline.store import Deadline, Store

OLD = 10_000.0
NEW = OLD + 3600.0


def test_a_deadline_written_at_the_old_clock_does_not_fire_at_the_new(store: Store) -> None:
    store.deadlines.add(Deadline(1, "prerun_timeout", "a", OLD + 60.0), now=OLD)
    moved, due = store.deadlines.sweep(NEW)  # the stepped host sweeps
    assert (moved, due) == (3600.0, [])
    # the host not yet stepped arms another, and moves every due time back to its frame
    store.deadlines.add(Deadline(2, "prerun_timeout", "b", OLD + 1 + 60.0), now=OLD + 1)
    moved, due = store.deadlines.sweep(NEW + 2)
    assert due == []
    assert moved > 3500.0
    pending = {d.jobid: d.due for d in store.deadlines.pending()}
    assert sorted(pending) == [1, 2]
    assert all(NEW + 60.0 <= due <= NEW + 65.0 for due in pending.values()), pending


def test_a_deadline_due_fires_once_as_the_clock_runs(store: Store) -> None:
    store.deadlines.add(Deadline(1, "prerun_timeout", "a", OLD + 60.0), now=OLD)
    fired = [store.deadlines.sweep(OLD + s)[1] for s in (20.0, 40.0, 59.0, 61.0, 62.0)]
    assert [[d.jobid for d in due] for due in fired] == [[], [], [], [1], []]

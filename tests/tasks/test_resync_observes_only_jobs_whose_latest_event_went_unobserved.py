"""dws.resync observes a job when the latest Workflow event the watcher saw went unobserved
for LOST_AFTER_S, when its last observe read a version and did not finish with it for
UNFINISHED_AFTER_S, or when an event names a job with no tracked record — and leaves
alone every job that waits on DWS or on Flux, however long ago its last observe was.

Run every second by beat: jobs in flight cost nothing, a lost observe costs seconds.
"""

from __future__ import annotations

import time

from pipeline.store import JobRecord, Store
from pipeline.store.resync import LOST_AFTER_S, UNFINISHED_AFTER_S
from pipeline.tasks.observe import resync
from tests.platform.results import result_of


def test_resync_observes_lost_unfinished_and_stray_events_and_nothing_else(
    resync_store: Store,
) -> None:
    store = resync_store
    now = time.time()
    late, fresh = now - LOST_AFTER_S - 5, now - 1

    long_ago = now - UNFINISHED_AFTER_S - 5

    def job(jobid: int, rv: str, observed_at: float = now, handled: bool = True) -> None:
        store.jobs.create(
            JobRecord(
                jobid=jobid, workflow=f"fluxjob-{jobid}", observed_rv=rv, observed_at=observed_at
            )
        )
        if handled:  # as an observe's run writes it when it settles
            with store.client.pipeline(transaction=False) as pipe:
                store.jobs.handled_in(pipe, jobid, rv)
                pipe.execute()

    def seen(jobid: int, rv: str, at: float) -> None:  # as the watcher notes an event
        store.watch.note_workflow(jobid, f"{rv} {at:.3f}", at, wanted=False, checkpoint=None)

    job(951, "5")
    seen(951, "5", late)  # observed
    job(952, "6")
    seen(952, "7", late)  # lost
    job(953, "8")
    seen(953, "9", fresh)  # its observe may still be on its way
    job(954, "3", observed_at=long_ago, handled=False)  # read, never finished with
    job(955, "4", observed_at=long_ago, handled=False)
    store.jobs.finish(955, retain_s=60)  # finished: not tracked
    assert 955 not in store.jobs.handled()
    seen(956, "2", late)  # stray: no record
    job(957, "6", observed_at=long_ago)  # waits on DWS or Flux: its observe finished
    seen(957, "6", long_ago)
    job(958, "2", observed_at=now - 5, handled=False)  # its observe may still be running
    assert result_of(resync) == 3
    deadline = time.monotonic() + 30
    while {952, 954} & set(store.jobs.jobids()) or store.client.hexists(
        store.keys.workflow_seen, "956"
    ):
        assert time.monotonic() < deadline, "the due jobs were never observed"
        time.sleep(0.05)
    # observed (no Workflow: finished) or left alone
    assert store.jobs.jobids() == [951, 953, 957, 958]
    for left in (951, 953, 955, 957, 958):
        record = store.jobs.get(left)
        assert record is not None and record.state is None  # never observed: no Workflow read
    # a job that can no longer fall due leaves the due set; one that still may waits in it
    waiting = store.client.zrange(store.keys.resync_due, 0, -1)
    assert sorted(int(m) for m in waiting) == [953, 958]

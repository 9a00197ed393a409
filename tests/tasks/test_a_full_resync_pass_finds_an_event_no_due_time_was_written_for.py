"""dws.resync's every-second pass reads only the jobs whose notes fell due; its full pass
(beat: every two minutes) reads every job's notes, so an unobserved event whose due time
was never written — noted by an older version, or its write lost — still gets observed."""

from __future__ import annotations

import time

from pipeline.store import Store
from pipeline.store.resync import LOST_AFTER_S
from pipeline.tasks.observe import resync
from tests.platform.results import result_of


def test_the_full_pass_observes_what_the_due_pass_cannot_see(resync_store: Store) -> None:
    store = resync_store
    late = time.time() - LOST_AFTER_S - 5
    # an event of a job with no record, noted with no due time
    store.client.hset(store.keys.workflow_seen, "44971", f"4 {late:.3f}")
    assert result_of(resync) == 0
    assert result_of(resync, full=True) == 1
    deadline = time.monotonic() + 30
    while store.client.hexists(store.keys.workflow_seen, "44971"):  # observed: no Workflow
        assert time.monotonic() < deadline, "the job was never observed"
        time.sleep(0.05)

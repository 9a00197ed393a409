"""``job.cleanup`` sends ``hwcoll.release`` as one of its actions, before the mark that
the job is finished: a cleanup killed at that mark has sent the release already (and
its re-run sends a copy, which finds nothing left to release), so no reservation waits
for ``hwcoll.reconcile`` to be found."""

from __future__ import annotations

import time

import pytest
from celery import Celery
from coral2_sim.fabric import FabricManagerSim

from pipeline.perform import performer as act
from pipeline.states.actions import Action, FinishJob
from pipeline.store import Store
from tests.conftest import make_r
from tests.tasks import fabric_fixtures
from tests.tasks.eager_app import store_of_app

fm = fabric_fixtures.fm  # the fixtures: a fabric manager, an app that reaches it
app = fabric_fixtures.app


class Killed(Exception):
    pass


def test_a_cleanup_killed_at_its_finish_mark_has_released_the_reservation(
    app: Celery, fm: FabricManagerSim
) -> None:
    store = store_of_app(app)
    app.tasks["job.run"].apply(kwargs={"jobid": 21, "userid": 1001, "R": make_r("c[1-2]")}).get()
    assert list(fm.reservations()) == ["elcap-21"]

    def die_at_the_finish(jobid: int, action: Action | None) -> None:
        if isinstance(action, FinishJob):
            raise Killed

    act.set_between(die_at_the_finish)
    try:
        with pytest.raises(Killed):
            app.tasks["job.cleanup"].apply(kwargs={"jobid": 21}, throw=True)
    finally:
        act.set_between(None)
    assert 21 in store.jobs.jobids()  # not finished: the run died at the mark
    assert releases(store) == 1  # but the release was sent, noted in the ledger
    app.tasks["job.cleanup"].apply(kwargs={"jobid": 21}, throw=True)  # the re-run
    assert 21 not in store.jobs.jobids()
    assert releases(store) == 2  # a copy, which the task takes as one
    for _ in range(2):
        app.tasks["hwcoll.release"].apply(kwargs={"jobid": 21}, throw=True)
    assert fm.reservations() == {}
    record = store.jobs.get(21)
    assert record is not None and record.hwcoll is not None and record.hwcoll.released


def releases(store: Store) -> int:
    due = store.ledger.due(time.time() + 10**6)
    return sum(1 for e in due if e.name == "hwcoll.release" and e.kwargs == {"jobid": 21})

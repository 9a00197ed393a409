"""``job.cleanup`` sends ``hwcoll.release`` as one of its actions, before the mark that
the job is finished: a cleanup killed at that mark has sent the release already (and
its re-run sends a copy, which finds nothing left to release), so no reservation waits
for ``hwcoll.reconcile`` to be found."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import Celery
from coral2_sim.fabric import FabricManagerSim
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.perform import performer as act
from pipeline.states.actions import Action, FinishJob
from pipeline.store import Store
from pipeline.tasks.hwcoll import close_fabric
from tests.conftest import make_r
from tests.tasks.eager_app import eager_app, store_of_app


class Killed(Exception):
    pass


@pytest.fixture
def fm() -> Iterator[FabricManagerSim]:
    with FabricManagerSim() as sim:
        yield sim


@pytest.fixture
def app(
    tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient], fm: FabricManagerSim
) -> Iterator[Celery]:
    auth = fm.write_credentials(tmp_path / "fm")
    app = eager_app(
        tmp_path, redis_url, kube[0].url,
        CORAL2_PIPELINE_HWCOLL__URL=fm.url,
        CORAL2_PIPELINE_HWCOLL__AUTH_DIR=str(auth),
        CORAL2_PIPELINE_HWCOLL__MIN_JOB_NODES="2",
        CORAL2_PIPELINE_HWCOLL__CLUSTER="elcap",
        CORAL2_PIPELINE_CRAY_SLINGSHOT__VNIS_PER_JOB="0",
    )  # fmt: skip
    yield app
    close_fabric(app)


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

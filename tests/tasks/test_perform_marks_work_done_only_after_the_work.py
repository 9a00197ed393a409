"""``perform`` applies the marks that say work is done (``MarkDone``, ``FinishJob``) after
every other action of the list, wherever the state function put them: a task killed
before them leaves the work done and the mark unwritten, never the other way round."""

from __future__ import annotations

import pytest
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.model.job import JobRecord
from pipeline.perform import performer as act
from pipeline.states.actions import Action, FinishJob, MarkDone, Release, UpdateJob
from pipeline.store import Store

LIST: list[Action] = [
    MarkDone({"failed_nodes": ["c2"]}),
    Release(0, ""),
    FinishJob(),
    UpdateJob({"hosts": ["c1", "c2"]}),
]


class Died(BaseException):
    pass


def test_the_marks_come_after_the_work_in_their_own_order(
    store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    store.jobs.create(JobRecord(jobid=5))
    order: list[str] = []
    act.set_between(lambda jobid, action: order.append(type(action).__name__))
    try:
        act.perform(store, kube[1], 5, LIST)
    finally:
        act.set_between(None)
    assert order == ["Release", "UpdateJob", "MarkDone", "FinishJob", "NoneType"]


def test_a_task_killed_before_its_marks_leaves_the_work_done_and_no_mark(
    store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    store.jobs.create(JobRecord(jobid=6))

    def die_at_the_first_mark(jobid: int, action: Action | None) -> None:
        if isinstance(action, MarkDone):
            raise Died

    act.set_between(die_at_the_first_mark)
    try:
        with pytest.raises(Died):
            act.perform(store, kube[1], 6, LIST)
    finally:
        act.set_between(None)
    record = store.jobs.get(6)
    assert record is not None and record.hosts == ["c1", "c2"]
    assert record.failed_nodes == []  # the mark was not written
    assert 6 in store.jobs.jobids()  # nor was the job finished
    verdict = store.releases.get(6)
    assert verdict is not None and verdict.status == 0  # the work was done

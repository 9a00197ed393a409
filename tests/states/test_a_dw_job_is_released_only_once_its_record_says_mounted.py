"""A ``#DW`` job is let start only once its record says its file systems are mounted
(PreRun complete, written when the mounts were confirmed): every node having answered its
prolog and even stopped its clientmount service is not enough while the record does not
say so — a stop answered early, or counted before the record was written, must not start
the job on computes whose mounts the pipeline never confirmed."""

from __future__ import annotations

from pipeline.model.job import JobRecord, NodeWork
from pipeline.states.actions import Release
from pipeline.states.nodes import on_answers

BOTH = {"n1", "n2"}


def held(*, mounted: bool) -> JobRecord:
    work = NodeWork(nodes=["n1", "n2"], dw=True, mounted=mounted)
    return JobRecord(jobid=7, userid=1001, node_work=work)


def test_every_node_stopped_but_not_recorded_mounted_releases_nothing() -> None:
    assert on_answers(held(mounted=False), BOTH, BOTH) == []


def test_recorded_mounted_with_every_node_stopped_releases_the_job() -> None:
    assert Release(hosts=("n1", "n2")) in on_answers(held(mounted=True), BOTH, BOTH)

"""A job Flux runs with VNIs the store no longer knows (its ``cray-slingshot`` event
names them) holds them again, under its user; one that started has its node work
recorded as done and released, so its CLEANUP undoes it; one still held in its prolog
gets its node work from its RUN again; a record that holds a reservation is left."""

from __future__ import annotations

from pipeline.model.job import JobRecord, NodeWork, Slingshot
from pipeline.states.actions import CreateRecord, RestoreVnis, UpdateJob
from pipeline.states.run import on_restore

HOSTS = ["compute01", "compute02"]


def restore(job: JobRecord, *, started: bool, cxi: bool = True) -> list[object]:
    return list(
        on_restore(
            job, hosts=HOSTS, cxi_enable=cxi, pool="1024-65535", vnis=[1030], reason="",
            dw=True, started=started,
        )
    )  # fmt: skip


def test_a_started_job_holds_its_vnis_and_its_node_work_is_done() -> None:
    job = JobRecord(jobid=5, userid=1001)
    actions = restore(job, started=True)
    assert actions[:3] == [
        CreateRecord(job),
        UpdateJob({"userid": 1001}),
        RestoreVnis((1030,), "1024-65535", "", tuple(HOSTS)),
    ]
    [work] = [a for a in actions[3:] if isinstance(a, UpdateJob)]
    assert work == UpdateJob(
        {"node_work": NodeWork(nodes=HOSTS, dw=True, mounted=True, released=True)}
    )


def test_a_job_held_in_its_prolog_gets_its_vnis_and_no_node_work() -> None:
    actions = restore(JobRecord(jobid=6, userid=1001), started=False)
    assert not any(isinstance(a, UpdateJob) and "node_work" in a.changes for a in actions)
    assert RestoreVnis((1030,), "1024-65535", "", tuple(HOSTS)) in actions


def test_without_cxi_services_no_node_gets_them() -> None:
    actions = restore(JobRecord(jobid=7, userid=1001), started=True, cxi=False)
    assert RestoreVnis((1030,), "1024-65535", "", ()) in actions


def test_a_record_that_holds_its_reservation_is_left() -> None:
    job = JobRecord(jobid=8, userid=1001, slingshot=Slingshot(vnis=[1030], nodes=HOSTS))
    assert restore(job, started=True) == []

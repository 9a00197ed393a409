"""A job's node work, action by action: the plan records the work (its nodes, whether it
is a ``#DW`` job's, since when, how long the nodes have to answer, whether PreRun was
already done) and sends each node its prolog with its own core count, as the job's user;
a mount wait is armed for any positive ``prolog_timeout`` of a ``#DW`` job not yet
mounted; a failure records why, raises one fatal exception, disarms both deadlines and
writes the failing verdict; and a duplicate RUN of a failed or released job writes that
same verdict again, while one of a job still waiting re-sends only what is missing (a
``#DW`` job mounted already: the stops of the nodes that answered)."""

from __future__ import annotations

from typing import Any

from pipeline.model.job import DeadlineKind, JobRecord, NodeWork
from pipeline.states.actions import (
    ArmDeadline,
    DisarmDeadline,
    MarkDone,
    MarkMounted,
    Release,
    SendNodeTask,
    SendOnce,
    UpdateJob,
)
from pipeline.states.nodes import fail, plan

CORES = {"n1": 96, "n2": 48}
NODES = ("n1", "n2")


def planned(**options: Any) -> list[Any]:
    defaults: dict[str, Any] = {
        "dw": False,
        "cxi": {"vnis": [1024]},
        "clientmount": True,
        "mounted": False,
        "now": 100.0,
        "timeout_s": 300.0,
    }
    return plan(JobRecord(jobid=7, userid=1001), cores=CORES, **{**defaults, **options})


def recorded(actions: list[Any]) -> NodeWork:
    [update] = [a for a in actions if isinstance(a, UpdateJob)]
    work = update.changes["node_work"]
    assert isinstance(work, NodeWork)
    return work


def test_the_plan_records_the_work_it_sends() -> None:
    work = recorded(planned(dw=True, mounted=True))
    assert work == NodeWork(nodes=list(NODES), dw=True, since=100.0, timeout_s=300.0, mounted=True)
    assert recorded(planned(dw=True, clientmount=False)).dw is False  # no service: no wait


def test_each_node_gets_its_own_core_count_as_the_jobs_user() -> None:
    sent = {a.node: a.kwargs for a in planned() if isinstance(a, SendNodeTask)}
    assert sent["n1"]["cxi"] == {"vnis": [1024], "ncores": 96}
    assert sent["n2"]["cxi"] == {"vnis": [1024], "ncores": 48}
    assert {k["jobid"] for k in sent.values()} == {7}
    assert {k["userid"] for k in sent.values()} == {1001}
    assert {k["clientmount"] for k in sent.values()} == {"stop"}  # not a #DW job's nodes


def test_a_mount_wait_is_armed_for_any_positive_prolog_timeout() -> None:
    mount = DeadlineKind.DWS_ENVIRONMENT
    assert ArmDeadline(mount, 1.0, "run") in planned(dw=True, mount_timeout_s=1.0)
    assert not [a for a in planned(dw=True, mount_timeout_s=0.0)
                if isinstance(a, ArmDeadline) and a.kind == mount]  # fmt: skip
    mounted = planned(dw=True, mounted=True, mount_timeout_s=60.0)
    assert MarkMounted() in mounted
    assert not [a for a in mounted if isinstance(a, ArmDeadline) and a.kind == mount]
    assert MarkMounted() not in planned(dw=False, mounted=True)


def test_a_failure_is_recorded_raised_once_disarmed_and_its_verdict_written() -> None:
    work = NodeWork(nodes=list(NODES))
    actions = fail(JobRecord(jobid=7), work, "node-prolog", "n2: no space")
    assert actions == [
        MarkDone({"node_work": work.model_copy(update={"failed": "n2: no space"})}),
        SendOnce(
            "exception",
            {"id": 7, "type": "node-prolog", "severity": 0, "note": "n2: no space"},
            "exception:node-prolog",
        ),
        DisarmDeadline(DeadlineKind.NODE_PROLOG),
        DisarmDeadline(DeadlineKind.DWS_ENVIRONMENT),
        Release(1, "n2: no space", NODES),
    ]


def again(work: NodeWork, **seen: Any) -> list[Any]:
    job = JobRecord(jobid=7, userid=1001, node_work=work)
    return plan(
        job, cores=CORES, dw=work.dw, cxi={"vnis": [1024]}, clientmount=True,
        mounted=work.mounted, now=200.0, timeout_s=300.0, **seen,
    )  # fmt: skip


def test_a_duplicate_run_of_a_failed_or_released_job_writes_its_verdict_again() -> None:
    failed = NodeWork(nodes=list(NODES), failed="n2: no space")
    assert again(failed) == [Release(1, "n2: no space", NODES)]
    assert again(NodeWork(nodes=list(NODES), released=True)) == [Release(hosts=NODES)]


def test_a_duplicate_run_of_a_mounted_dw_job_stops_those_that_answered_and_waits() -> None:
    work = NodeWork(nodes=list(NODES), dw=True, mounted=True)
    actions = again(work, ready={"n1", "n2"}, stopped=set())
    stops = [a.node for a in actions if isinstance(a, SendNodeTask)]
    assert stops == ["n1", "n2"]  # the prologs all answered: their stops again, no prolog
    assert all(a.kwargs.get("action") == "stop" for a in actions if isinstance(a, SendNodeTask))
    assert not [a for a in actions if isinstance(a, Release)]

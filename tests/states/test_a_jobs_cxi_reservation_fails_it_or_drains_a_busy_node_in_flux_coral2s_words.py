"""The Slingshot rules' exact words and marks: a reservation that failed raises one fatal
``cray-slingshot`` exception (severity 0) with its reason and writes the failing verdict
for the job's nodes (its node work's, else the hosts given), never again once its VNIs
were released; a node whose services stay busy is retried, remembered since its first
busy answer, and once past the give-up time drained once in Flux, in ``update`` mode,
with the VNIs and the busy services named; a node counted clean already only finishes
a job tracked for its nodes alone; the CXI epilog is sent as the job's user."""

from __future__ import annotations

from pipeline.model.job import JobRecord, NodeWork, Slingshot
from pipeline.states.actions import (
    ArmDeadline,
    FinishJob,
    MarkDone,
    Release,
    SendNodeTask,
    SendOnce,
    UpdateJob,
)
from pipeline.states.slingshot import BusyPolicy, on_node_clean, on_retry, resume

NODES = ["n1", "n2"]
POLICY = BusyPolicy(give_up_s=300.0, retry_s=10.0)


def failed(**changes: object) -> JobRecord:
    state = Slingshot(reason="no VNI left in 1024-1025", failed=True)
    return JobRecord(jobid=8, userid=1001, slingshot=state).model_copy(update=changes)


def test_a_failed_reservation_fails_the_job_once_naming_its_nodes() -> None:
    fatal = SendOnce(
        "exception",
        {"id": 8, "type": "cray-slingshot", "severity": 0, "note": "no VNI left in 1024-1025"},
        "exception:cray-slingshot",
    )
    assert resume(failed(), hosts=["h1"]) == [
        fatal,
        Release(1, "no VNI left in 1024-1025", ("h1",)),
    ]
    planned = failed(node_work=NodeWork(nodes=NODES))
    assert resume(planned, hosts=["h1"])[-1] == Release(1, "no VNI left in 1024-1025", ("n1", "n2"))
    released = failed(slingshot=Slingshot(reason="x", failed=True, released=True))
    assert resume(released) == []


def busy_job(**state: object) -> JobRecord:
    held = Slingshot(vnis=[1024, 1025], nodes=NODES, released=True).model_copy(update=state)
    return JobRecord(jobid=8, userid=1001, slingshot=held)


def test_a_busy_node_is_retried_and_remembered_since_its_first_busy_answer() -> None:
    actions = on_node_clean(busy_job(), "n1", ["cxi0 service 2"], now=100.0, policy=POLICY)
    update = busy_job().slingshot.model_copy(update={"busy_since": {"n1": 100.0}})  # type: ignore[union-attr]
    assert actions == [
        UpdateJob({"slingshot": update}),
        ArmDeadline("cxi_retry", 10.0, "retry"),
    ]
    later = on_node_clean(busy_job(busy_since={"n1": 100.0}), "n1", ["x"], 200.0, POLICY)
    assert later[0] == UpdateJob({"slingshot": update})  # the first time is kept


def test_a_node_busy_past_the_give_up_time_is_drained_once_in_update_mode() -> None:
    job = busy_job(busy_since={"n1": 100.0})
    actions = on_node_clean(job, "n1", ["cxi0 service 2", "cxi1 service 2"], 400.0, POLICY)
    reason = "CXI services of VNIs 1024,1025 busy: cxi0 service 2; cxi1 service 2"
    drained = job.slingshot.model_copy(update={"drained": ["n1"]})  # type: ignore[union-attr]
    assert actions == [
        MarkDone({"slingshot": drained}),
        SendOnce("drain", {"targets": "n1", "mode": "update", "reason": reason}, "drain:cxi:n1"),
    ]
    assert on_node_clean(busy_job(busy_since={"n1": 0.0}, drained=["n1"]), "n1", ["x"], 400.0,
                         POLICY) == []  # fmt: skip


def test_a_node_counted_clean_already_only_finishes_a_job_of_nodes_alone() -> None:
    done = busy_job(clean=NODES)
    assert on_node_clean(done, "n1", [], 10.0, POLICY) == [FinishJob()]
    waiting = busy_job(clean=["n1"])
    assert on_node_clean(waiting, "n1", [], 10.0, POLICY) == []


def test_the_cxi_epilog_is_sent_again_as_the_jobs_user() -> None:
    [send] = [a for a in on_retry(busy_job(clean=["n1"])) if isinstance(a, SendNodeTask)]
    assert send.node == "n2"
    assert (send.kwargs["jobid"], send.kwargs["userid"]) == (8, 1001)
    assert send.kwargs["cxi"] == {"vnis": [1024, 1025]}

"""A job's epilog answers are counted without its lock; the count comes before the epilogs
go out, and once every node has answered clean, their confirmations go to the VNI pool in
one step and the job is finished — a node not yet clean keeps it waiting, a node counted
twice is confirmed once."""

from __future__ import annotations

from pipeline.model.job import JobRecord, NodeWork, Slingshot
from pipeline.states.actions import (
    ConfirmDestroyed,
    ExpectAnswers,
    FinishJob,
    MarkDone,
    SendNodeTask,
)
from pipeline.states.nodes import epilogs
from pipeline.states.slingshot import on_clean, on_retry

NODES = ["n1", "n2", "n3"]


def job(clean: list[str] | None = None) -> JobRecord:
    state = Slingshot(vnis=[1024], nodes=NODES, released=True, clean=clean or [])
    work = NodeWork(nodes=NODES, since=0.0, timeout_s=300.0)
    return JobRecord(jobid=8, userid=1001, slingshot=state, node_work=work)


def test_the_epilogs_expected_count_comes_before_they_are_sent() -> None:
    actions = epilogs(job(), [1024], clientmount=False)
    expect = actions.index(ExpectAnswers(3, "clean"))
    sends = [i for i, a in enumerate(actions) if isinstance(a, SendNodeTask)]
    assert len(sends) == 3 and expect < min(sends)


def test_nodes_not_yet_all_clean_are_confirmed_and_the_job_waits() -> None:
    actions = on_clean(job(), {"n1", "n2"})
    assert actions[0] == ConfirmDestroyed(("n1", "n2"))
    assert FinishJob() not in actions
    marked = [a for a in actions if isinstance(a, MarkDone)]
    assert marked[0].changes["slingshot"].clean == ["n1", "n2"]


def test_the_last_clean_node_confirms_the_rest_and_finishes_the_job() -> None:
    actions = on_clean(job(clean=["n1"]), {"n1", "n2", "n3"})
    assert actions[0] == ConfirmDestroyed(("n2", "n3"))
    assert actions[-1] == FinishJob()


def test_a_job_all_confirmed_already_is_only_finished() -> None:
    assert on_clean(job(clean=NODES), set(NODES)) == [FinishJob()]


def test_the_retry_skips_nodes_counted_clean() -> None:
    sent = [a.node for a in on_retry(job(clean=["n1"]), {"n2"}) if isinstance(a, SendNodeTask)]
    assert sent == ["n3"]

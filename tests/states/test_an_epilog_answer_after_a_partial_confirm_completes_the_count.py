"""Nodes confirmed clean are kept as each later one is counted: after some nodes of a job
were confirmed (its first answers, or an admin's sweep), the answer of each node left adds
to them, and the last one completes the count — the VNIs leave quarantine and a job
tracked for its nodes alone is finished — whichever way the answer comes in (the count of
every answer at once, or one node's epilog answer on its own)."""

from __future__ import annotations

from pipeline.model.job import JobRecord, NodeWork, Slingshot
from pipeline.states.actions import ConfirmDestroyed, FinishJob, ForgetAnswers, MarkDone
from pipeline.states.slingshot import on_clean, on_node_clean

NODES = ["n1", "n2", "n3"]


def job(clean: list[str]) -> JobRecord:
    state = Slingshot(vnis=[1024], nodes=NODES, released=True, clean=clean)
    work = NodeWork(nodes=NODES, since=0.0, timeout_s=300.0)
    return JobRecord(jobid=8, userid=1001, slingshot=state, node_work=work)


def clean_after(actions: list[object]) -> list[str]:
    [marked] = [a for a in actions if isinstance(a, MarkDone)]
    state = marked.changes["slingshot"]
    assert isinstance(state, Slingshot)
    return list(state.clean)


def test_the_count_of_the_rest_keeps_those_confirmed_and_completes() -> None:
    actions = on_clean(job(["n1"]), {"n1", "n2", "n3"})
    assert clean_after(actions) == NODES
    assert ForgetAnswers("clean") in actions
    assert actions[-1] == FinishJob()


def test_one_nodes_answer_after_a_partial_confirm_adds_to_it() -> None:
    actions = on_node_clean(job(["n1"]), "n2", [], now=10.0)
    assert actions[0] == ConfirmDestroyed(("n2",))
    assert clean_after(actions) == ["n1", "n2"]
    assert FinishJob() not in actions


def test_the_last_nodes_own_answer_completes_the_count() -> None:
    actions = on_node_clean(job(["n1", "n2"]), "n3", [], now=10.0)
    assert clean_after(actions) == NODES
    assert actions[-1] == FinishJob()

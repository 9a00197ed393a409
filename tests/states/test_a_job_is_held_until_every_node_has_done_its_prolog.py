"""The node-work decisions: each node's prolog at RUN, the job released once every node
has answered (after PreRun and the clientmount stop for a #DW job), failed with the names
of nodes that fail or stay silent, and each node's epilog at CLEANUP. The answers are
counted in the store; the decisions get the nodes that answered each phase."""

from __future__ import annotations

from typing import Any

from pipeline.model.job import JobRecord, NodeWork
from pipeline.states.actions import (
    ArmDeadline,
    DisarmDeadline,
    ExpectAnswers,
    MarkMounted,
    Release,
    SendNodeTask,
    SendOnce,
    UpdateJob,
)
from pipeline.states.nodes import (
    DEADLINE,
    MOUNT_DEADLINE,
    epilogs,
    on_answers,
    on_mount_timeout,
    on_mounted,
    on_prolog_failed,
    on_timeout,
    plan,
)

BOTH = {"n1", "n2"}

CORES = {"n1": 96, "n2": 48}


def held(**work: Any) -> JobRecord:
    node_work = NodeWork(nodes=["n1", "n2"], **work)
    return JobRecord(jobid=7, userid=1001, node_work=node_work)


def sent(actions: list[Any], name: str) -> list[SendNodeTask]:
    return [a for a in actions if isinstance(a, SendNodeTask) and a.name == name]


def run(**options: Any) -> list[Any]:
    defaults: dict[str, Any] = {"dw": False, "cxi": None, "clientmount": True, "mounted": False}
    return plan(
        JobRecord(jobid=7, userid=1001),
        cores=CORES,
        now=100.0,
        timeout_s=300.0,
        mount_timeout_s=1800.0,
        **{**defaults, **options},
    )


def test_each_node_gets_one_prolog_with_its_cxi_services_and_clientmount_action() -> None:
    actions = run(cxi={"vnis": [1024]})
    prologs = sent(actions, "node.prolog")
    assert [(p.node, p.kwargs["cxi"], p.kwargs["clientmount"]) for p in prologs] == [
        ("n1", {"vnis": [1024], "ncores": 96}, "stop"),
        ("n2", {"vnis": [1024], "ncores": 48}, "stop"),
    ]
    assert ArmDeadline(DEADLINE, 300.0, "run") in actions
    assert ExpectAnswers(2) in actions
    assert not any(isinstance(a, Release) for a in actions)


def test_a_dw_job_starts_clientmount_and_waits_for_its_file_systems() -> None:
    actions = run(dw=True)
    assert {p.kwargs["clientmount"] for p in sent(actions, "node.prolog")} == {"start"}
    assert ArmDeadline(MOUNT_DEADLINE, 1800.0, "run") in actions


def test_a_job_with_nothing_to_do_on_its_nodes_is_released_at_once() -> None:
    assert run(clientmount=False) == [Release(hosts=("n1", "n2"))]


def test_the_job_is_released_once_every_node_answered() -> None:
    assert on_answers(held(), {"n1"}, set()) == []
    assert Release(hosts=("n1", "n2")) in on_answers(held(), BOTH, set())
    assert on_answers(held(released=True), BOTH, set()) == []


def test_a_node_that_fails_its_prolog_fails_the_job_naming_it() -> None:
    actions = on_prolog_failed(held(), "n2", "cxi0: no resources", "cray-slingshot")
    [raised] = [a for a in actions if isinstance(a, SendOnce)]
    assert raised.payload["type"] == "cray-slingshot"
    assert raised.payload["note"] == "n2: cxi0: no resources"
    assert Release(1, "n2: cxi0: no resources", ("n1", "n2")) in actions


def test_a_dw_job_is_released_only_after_prerun_and_every_clientmount_stop() -> None:
    assert on_answers(held(dw=True), BOTH, set()) == []  # not mounted yet
    mounted = on_mounted(held(dw=True))
    assert MarkMounted() in mounted and ArmDeadline(DEADLINE, 300.0, "mounted") in mounted
    assert on_answers(held(dw=True, mounted=True), BOTH, {"n1"}) == []
    assert Release(hosts=("n1", "n2")) in on_answers(held(dw=True, mounted=True), BOTH, BOTH)


def test_prerun_done_before_run_marks_the_job_mounted_at_once() -> None:
    actions = run(dw=True, mounted=True)
    assert MarkMounted() in actions
    assert not any(isinstance(a, ArmDeadline) and a.kind == MOUNT_DEADLINE for a in actions)


def test_silent_nodes_fail_the_job_with_their_names() -> None:
    actions = on_timeout(held(timeout_s=300.0), {"n1"}, set())
    [raised] = [a for a in actions if isinstance(a, SendOnce)]
    assert raised.payload["type"] == "node-prolog"
    assert raised.payload["note"] == "no answer from the node worker of n2 in 300 s"
    assert on_timeout(held(released=True), BOTH, set()) == []


def test_unmounted_file_systems_raise_flux_coral2s_prolog_timeout() -> None:
    [_, raised, *_] = on_mount_timeout(held(dw=True))
    assert isinstance(raised, SendOnce)
    assert (raised.payload["type"], raised.payload["note"]) == (
        "prolog-timeout",
        "dws_environment timeout",
    )
    assert on_mount_timeout(held(dw=True, mounted=True)) == []


def test_a_duplicate_run_resends_only_what_is_missing() -> None:
    actions = plan(
        held(),
        cores=CORES,
        dw=False,
        cxi=None,
        clientmount=True,
        mounted=False,
        now=0,
        timeout_s=1,
        ready={"n1"},
    )
    assert [p.node for p in sent(actions, "node.prolog")] == ["n2"]
    assert not any(isinstance(a, UpdateJob) for a in actions)


def test_each_node_gets_its_epilog_at_cleanup() -> None:
    actions = epilogs(held(dw=True), [1024], clientmount=True)
    sends = [a for a in actions if isinstance(a, SendNodeTask)]
    assert [(e.node, e.kwargs["clientmount"], e.kwargs["cxi"]) for e in sends] == [
        ("n1", "start", {"vnis": [1024]}),
        ("n2", "start", {"vnis": [1024]}),
    ]
    assert not any(isinstance(a, SendNodeTask) for a in epilogs(held(), None, clientmount=True))


def test_cleanup_disarms_the_prologs_deadlines_even_with_no_epilog_to_send() -> None:
    for actions in (
        epilogs(held(dw=True), [1024], clientmount=True),
        epilogs(held(), None, clientmount=True),
    ):
        disarmed = {a.kind for a in actions if isinstance(a, DisarmDeadline)}
        assert disarmed == {"node_prolog", "dws_environment"}

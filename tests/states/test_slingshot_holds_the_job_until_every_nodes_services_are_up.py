"""The Slingshot decisions: reservation at RUN, node by node release, quarantine at CLEANUP,
busy services retried by housekeeping and then drained."""

from __future__ import annotations

from pipeline.model.job import JobRecord, Slingshot
from pipeline.states.actions import (
    ArmDeadline,
    ConfirmDestroyed,
    FinishJob,
    ReleaseVnis,
    SendNodeTask,
    SendOnce,
    UpdateJob,
)
from pipeline.states.slingshot import (
    BUSY_GIVE_UP_S,
    on_cleanup,
    on_node_clean,
    on_node_ready,
    on_reserved,
    resume,
)

CORES = {"n1": 96, "n2": 96}


def job(**state: object) -> JobRecord:
    slingshot = Slingshot(**state) if state else None  # type: ignore[arg-type]
    return JobRecord(jobid=7, userid=1001, slingshot=slingshot)


def kinds(actions: list[object]) -> list[str]:
    return [a.kind for a in actions if isinstance(a, SendOnce)]


def test_a_reservation_posts_the_event_and_sends_each_node_its_prolog() -> None:
    actions = on_reserved(job(), [1024, 1025], "", fatal=False, cores=CORES, cxi_enable=True)
    assert kinds(actions) == ["event-post"]
    prologs = [a for a in actions if isinstance(a, SendNodeTask)]
    assert [(p.node, p.name, p.kwargs["ncores"], p.kwargs["vnis"]) for p in prologs] == [
        ("n1", "node.cxi_prolog", 96, [1024, 1025]),
        ("n2", "node.cxi_prolog", 96, [1024, 1025]),
    ]


def test_no_vnis_or_no_cxi_releases_the_job_at_once() -> None:
    empty = on_reserved(job(), [], "none requested", fatal=False, cores=CORES, cxi_enable=True)
    assert kinds(empty) == ["event-post", "prolog-finish"]
    no_cxi = on_reserved(job(), [1024], "", fatal=False, cores=CORES, cxi_enable=False)
    assert kinds(no_cxi) == ["event-post", "prolog-finish"]


def test_a_fatal_failure_raises_the_cray_slingshot_exception_and_posts_nothing() -> None:
    why = "failed to reserve 2 VNIs (1 available)"
    actions = on_reserved(job(), [], why, fatal=True, cores=CORES, cxi_enable=True)
    assert kinds(actions) == ["exception"]
    assert kinds(resume(job(reason=why, failed=True), CORES)) == ["exception"]


def test_the_last_node_ready_releases_the_job_once() -> None:
    held = job(vnis=[1024], nodes=["n1", "n2"])
    assert kinds(on_node_ready(held, "n1")) == []
    last = job(vnis=[1024], nodes=["n1", "n2"], ready=["n1"])
    assert kinds(on_node_ready(last, "n2")) == ["prolog-finish"]
    assert on_node_ready(job(vnis=[1024], nodes=["n1"], ready=["n1"]), "n1") == []


def test_a_duplicate_run_resends_only_to_nodes_not_ready() -> None:
    actions = resume(job(vnis=[1024], nodes=["n1", "n2"], ready=["n1"]), CORES)
    assert [a.node for a in actions if isinstance(a, SendNodeTask)] == ["n2"]


def test_cleanup_quarantines_the_vnis_and_sends_each_node_its_epilog() -> None:
    actions = on_cleanup(job(vnis=[1024], nodes=["n1", "n2"], ready=["n1", "n2"]))
    assert actions[0] == ReleaseVnis(("n1", "n2"))
    assert [a.node for a in actions if isinstance(a, SendNodeTask)] == ["n1", "n2"]
    assert on_cleanup(job(vnis=[1024], nodes=["n1"], released=True)) == []


def test_a_clean_node_confirms_and_the_last_one_finishes_a_job_without_workflow() -> None:
    released = job(vnis=[1024], nodes=["n1", "n2"], released=True, clean=["n1"])
    actions = on_node_clean(released, "n2", [], now=0.0)
    assert actions[0] == ConfirmDestroyed("n2")
    assert actions[-1] == FinishJob()


def test_busy_services_are_retried_then_the_node_is_drained() -> None:
    released = job(vnis=[1024], nodes=["n1"], released=True)
    first = on_node_clean(released, "n1", ["cxi0 service 2"], now=100.0)
    assert any(isinstance(a, ArmDeadline) and a.kind == "cxi_retry" for a in first)
    waited = job(vnis=[1024], nodes=["n1"], released=True, busy_since={"n1": 100.0})
    later = on_node_clean(waited, "n1", ["cxi0 service 2"], now=100.0 + BUSY_GIVE_UP_S)
    [drain] = [a for a in later if isinstance(a, SendOnce)]
    assert drain.kind == "drain" and drain.payload["targets"] == "n1"
    assert "cxi0 service 2" in drain.payload["reason"]
    assert not any(
        isinstance(a, (ConfirmDestroyed, UpdateJob)) and a == ConfirmDestroyed("n1") for a in later
    )

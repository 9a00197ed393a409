"""The Slingshot decisions: the reservation and its event at RUN (the reservation as
written when made, then its event posted from the record), quarantine at CLEANUP, busy
services retried by housekeeping and then drained."""

from __future__ import annotations

from pipeline.model.job import JobRecord, Slingshot
from pipeline.states.actions import (
    ArmDeadline,
    ConfirmDestroyed,
    FinishJob,
    Release,
    ReleaseVnis,
    SendNodeTask,
    SendOnce,
)
from pipeline.states.slingshot import (
    BUSY,
    BusyPolicy,
    cxi_part,
    on_cleanup,
    on_node_clean,
    on_retry,
    outcome,
    resume,
)


def job(**state: object) -> JobRecord:
    slingshot = Slingshot(**state) if state else None  # type: ignore[arg-type]
    return JobRecord(jobid=7, userid=1001, slingshot=slingshot)


def kinds(actions: list[object]) -> list[str]:
    return [a.kind for a in actions if isinstance(a, SendOnce)]


def test_a_reservation_posts_the_event_and_names_the_nodes_that_get_services() -> None:
    state = outcome([1024, 1025], "", fatal=False, nodes=["n1", "n2"])
    assert state.nodes == ["n1", "n2"] and not state.failed
    actions = resume(job(**state.model_dump()))
    assert kinds(actions) == ["event-post"]
    [event] = [a for a in actions if isinstance(a, SendOnce)]
    assert event.payload == {"id": 7, "name": "cray-slingshot", "context": {"vnis": [1024, 1025]}}


def test_the_cxi_part_of_the_node_prolog_is_the_vnis_or_nothing() -> None:
    assert cxi_part(job(vnis=[1024], nodes=["n1"])) == {"vnis": [1024]}
    assert cxi_part(job(vnis=[], reason="none requested")) is None
    assert cxi_part(job()) is None


def test_an_empty_reservation_gives_no_node_services() -> None:
    state = outcome([], "none requested", fatal=False, nodes=["n1"])
    assert state.nodes == []
    [event] = [a for a in resume(job(**state.model_dump())) if isinstance(a, SendOnce)]
    assert event.payload["context"] == {"vnis": [], "empty-reason": "none requested"}


def test_a_fatal_failure_raises_the_exception_and_fails_the_held_prolog() -> None:
    why = "failed to reserve 2 VNIs (1 available)"
    state = outcome([], why, fatal=True, nodes=["n1"])
    assert state.failed and state.reason == why
    actions = resume(job(**state.model_dump()), ["n1"])
    assert kinds(actions) == ["exception"]
    assert Release(1, why, ("n1",)) in actions


def test_a_duplicate_run_posts_the_event_again_under_the_same_mark() -> None:
    [again] = resume(job(vnis=[1024], nodes=["n1"]))
    assert isinstance(again, SendOnce) and again.mark == "event:cray-slingshot"


def test_cleanup_quarantines_the_vnis_until_each_node_confirms() -> None:
    actions = on_cleanup(job(vnis=[1024], nodes=["n1", "n2"]))
    assert actions[0] == ReleaseVnis(("n1", "n2"))
    assert on_cleanup(job(vnis=[1024], nodes=["n1"], released=True)) == []


def test_a_clean_node_confirms_and_the_last_one_finishes_a_job_without_workflow() -> None:
    released = job(vnis=[1024], nodes=["n1", "n2"], released=True, clean=["n1"])
    actions = on_node_clean(released, "n2", [], now=0.0)
    assert actions[0] == ConfirmDestroyed(("n2",))
    assert actions[-1] == FinishJob()


def test_busy_services_are_retried_then_the_node_is_drained() -> None:
    released = job(vnis=[1024], nodes=["n1"], released=True)
    first = on_node_clean(released, "n1", ["cxi0 service 2"], now=100.0)
    assert any(isinstance(a, ArmDeadline) and a.kind == "cxi_retry" for a in first)
    [retry] = on_retry(released)
    assert isinstance(retry, SendNodeTask) and retry.name == "node.epilog"
    assert retry.kwargs["cxi"] == {"vnis": [1024]} and retry.kwargs["clientmount"] is None
    waited = job(vnis=[1024], nodes=["n1"], released=True, busy_since={"n1": 100.0})
    later = on_node_clean(waited, "n1", ["cxi0 service 2"], now=100.0 + BUSY.give_up_s)
    [drain] = [a for a in later if isinstance(a, SendOnce)]
    assert drain.kind == "drain" and drain.payload["targets"] == "n1"
    assert "cxi0 service 2" in drain.payload["reason"]
    assert ConfirmDestroyed(("n1",)) not in later


def test_the_site_sets_how_long_busy_services_are_retried_and_how_often() -> None:
    released = job(vnis=[1024], nodes=["n1"], released=True, busy_since={"n1": 100.0})
    policy = BusyPolicy(give_up_s=2.0, retry_s=0.5)
    soon = on_node_clean(released, "n1", ["cxi0 service 2"], now=101.0, policy=policy)
    assert ArmDeadline("cxi_retry", 0.5, "retry") in soon
    late = on_node_clean(released, "n1", ["cxi0 service 2"], now=102.0, policy=policy)
    assert [a.kind for a in late if isinstance(a, SendOnce)] == ["drain"]


def test_a_drained_node_swept_clean_later_confirms_and_finishes_the_job() -> None:
    drained = job(vnis=[1024], nodes=["n1"], released=True, drained=["n1"])
    actions = on_node_clean(drained, "n1", [], now=500.0)
    assert actions[0] == ConfirmDestroyed(("n1",))
    assert actions[-1] == FinishJob()

"""A complete Teardown disarms every deadline of the Workflow's states and every other
deadline the record names (one an older release named and this one does not know is
left alone), and ends the hold an early epilog release took on the job's rabbits, each
rabbit once; a job whose epilog was not released early holds no rabbit. A Teardown DWS
refuses releases the epilog once, under the same once-mark a complete one uses."""

from __future__ import annotations

from pipeline.model.job import DeadlineKind, Epilog, Teardown
from pipeline.states.actions import DisarmDeadline, FreeRabbits, SendOnce
from pipeline.states.observed import decide
from tests.states.factory import job, settings, snapshot

WORKFLOWS = {"setup_timeout", "prerun_timeout", "tc_timeout", "postrun_timeout", "teardown_after"}


def disarmed(actions: list[object]) -> set[str]:
    return {a.kind for a in actions if isinstance(a, DisarmDeadline)}


def test_every_named_deadline_and_every_states_one_is_disarmed() -> None:
    named = {DeadlineKind.NODE_PROLOG.value: "t1", "retired_kind": "t2"}
    done = job(teardown=Teardown.ASKED, deadlines=named)
    actions = decide(snapshot("Teardown"), done, 0.0, settings())
    assert disarmed(actions) == WORKFLOWS | {"node_prolog"}  # not the unknown one


def test_an_early_release_frees_each_of_its_rabbits_once() -> None:
    early = job(teardown=Teardown.ASKED, epilog=Epilog.EARLY, rabbits=["r2", "r1", "r2"])
    actions = decide(snapshot("Teardown"), early, 0.0, settings())
    assert FreeRabbits(("r1", "r2")) in actions
    held = job(teardown=Teardown.ASKED, rabbits=["r1"])
    assert not [a for a in decide(snapshot("Teardown"), held, 0.0, settings())
                if isinstance(a, FreeRabbits)]  # fmt: skip


def test_a_refused_teardown_releases_the_epilog_under_its_once_mark() -> None:
    refused = snapshot("Teardown", ready=False, status="Error", message="in use")
    actions = decide(refused, job(teardown=Teardown.ASKED), 0.0, settings())
    assert SendOnce("epilog-remove", {"id": 42}, "epilog-remove") in actions

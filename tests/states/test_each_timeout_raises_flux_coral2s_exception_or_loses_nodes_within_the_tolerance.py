"""The state timeouts in flux-coral2's words: Setup's and PreRun's are a fatal
``dws-timeout`` (severity 0) saying what took too long, raised once; a job that tolerates
a loss loses instead the computes behind the rabbits that were late — counted with those
it lost before, marked ``badrabbit`` by their rabbit, announced by one ``dws-node-failure``
(severity 1) per batch, and DWS told to go on — as long as the count stays within its
tolerance; a Lustre Setup never leaves a rabbit out. PostRun's is a fatal
``rabbit-timeout`` that skips data movement; ``teardown_after``'s a ``teardown-timeout``
of severity 1."""

from __future__ import annotations

from pipeline.states.actions import (
    ForceReady,
    HoldBadRabbit,
    HoldRabbits,
    RabbitDaemonDown,
    SendOnce,
    UpdateJob,
)
from pipeline.states.deadlines import (
    postrun_timeout,
    prerun_timeout,
    setup_timeout,
    teardown_after,
)
from tests.states.factory import job, settings, snapshot


def raised(actions: list[object]) -> list[tuple[str, int, str, str]]:
    return [
        (a.payload["type"], a.payload["severity"], a.payload["note"], a.mark)
        for a in actions
        if isinstance(a, SendOnce) and a.kind == "exception"
    ]


SETUP = ("dws-timeout", 0, "File system creation took too long", "exception:dws-timeout")
PRERUN = ("dws-timeout", 0, "timed out waiting for mounts", "exception:dws-timeout")


def test_setup_and_prerun_timeouts_are_fatal_in_flux_coral2s_words() -> None:
    assert raised(setup_timeout(job(), lustre=False, behind=["c3"])) == [SETUP]
    assert raised(prerun_timeout(job(), ["c3"], {"c3": "r1"})) == [PRERUN]


def test_a_tolerated_loss_counts_marks_announces_and_goes_on() -> None:
    tolerant = job(failure_tolerance=2, failed_nodes=["c1"])
    actions = prerun_timeout(tolerant, ["c3"], {"c3": "r1"})
    assert UpdateJob({"failed_nodes": ["c1", "c3"]}) in actions
    assert HoldBadRabbit("r1", ("c3",)) in actions
    assert raised(actions) == [
        ("dws-node-failure", 1, "c3", "exception:node-failure:c3")
    ]  # fmt: skip
    assert actions[-1] == ForceReady()


def test_a_loss_past_the_tolerance_is_counted_and_fatal() -> None:
    tolerant = job(failure_tolerance=1, failed_nodes=["c1"])
    actions = prerun_timeout(tolerant, ["c3"], {"c3": "r1"})
    assert UpdateJob({"failed_nodes": ["c1", "c3"]}) in actions
    assert raised(actions) == [PRERUN] and ForceReady() not in actions


def test_a_tolerance_of_one_is_a_tolerance_and_lustre_leaves_no_rabbit_out() -> None:
    one = job(failure_tolerance=1)
    assert ForceReady() in setup_timeout(one, lustre=False, behind=["c3"])
    assert raised(setup_timeout(one, lustre=True, behind=["c3"])) == [SETUP]
    assert ForceReady() in prerun_timeout(one, ["c3"], {"c3": "r1"})


def test_rabbits_whose_daemons_are_down_go_down_whatever_the_tolerance() -> None:
    actions = prerun_timeout(job(), [], {}, rabbits_down=["r2", "r1", "r2"])
    assert actions[0] == RabbitDaemonDown(("r1", "r2"))
    assert not [a for a in prerun_timeout(job(), [], {}) if isinstance(a, RabbitDaemonDown)]


def test_postrun_and_teardown_after_skip_data_movement_in_their_words() -> None:
    workflow = snapshot("PostRun", ready=False).workflow
    actions = postrun_timeout(job(), workflow, [], settings())
    assert raised(actions) == [
        ("rabbit-timeout", 0, "unmounts timed out, skipping data movement",
         "exception:rabbit-timeout"),
    ]  # fmt: skip
    assert raised(teardown_after(job(), workflow, settings())) == [
        ("teardown-timeout", 1, "skipping rabbit data movement", "exception:teardown-timeout")
    ]


def test_a_postrun_timeout_releases_the_epilog_early_unless_told_not_to() -> None:
    workflow = snapshot("PostRun", ready=False).workflow
    held = job(rabbits=["r2", "r1"])
    early = postrun_timeout(held, workflow, ["c3"], settings())
    assert HoldRabbits(("r1", "r2")) in early
    assert SendOnce("epilog-remove", {"id": 42}, "epilog-remove") in early
    whole = postrun_timeout(held, workflow, ["c3"], settings(), partial=False)
    assert not [a for a in whole if isinstance(a, HoldRabbits)]

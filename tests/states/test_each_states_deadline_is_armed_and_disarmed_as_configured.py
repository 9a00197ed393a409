"""The state timeouts follow their settings to the second: DataIn's move arms PreRun's
timeout for any positive ``prerun_timeout`` (0: none), and PostRun's move to DataOut
disarms PostRun's own."""

from __future__ import annotations

from pipeline.model.job import DeadlineKind
from pipeline.states.actions import ArmDeadline, DisarmDeadline
from pipeline.states.observed import decide
from tests.states.factory import job, settings, snapshot


def test_any_positive_prerun_timeout_is_armed_as_datain_is_left() -> None:
    actions = decide(
        snapshot("DataIn"), job(workflow="fluxjob-42"), 0.0, settings(prerun_timeout=1)
    )
    assert ArmDeadline(DeadlineKind.PRERUN, 1.0, "pre_run") in actions
    none = decide(snapshot("DataIn"), job(workflow="fluxjob-42"), 0.0, settings(prerun_timeout=0))
    assert not [a for a in none if isinstance(a, ArmDeadline)]


def test_leaving_postrun_disarms_its_timeout() -> None:
    actions = decide(snapshot("PostRun"), job(workflow="fluxjob-42"), 0.0, settings())
    assert DisarmDeadline(DeadlineKind.POSTRUN) in actions

"""A Workflow gone before its Teardown was seen (deleted by hand, or its Teardown's record
lost with the last second of a crashed Redis) takes the deadlines on its states with it:
the job is finished with every one of them disarmed, whether Flux still waits on its
epilog or not."""

from __future__ import annotations

from pipeline.model.job import DeadlineKind, Epilog, JobRecord
from pipeline.states.actions import DisarmDeadline, FinishJob
from pipeline.states.hooks import on_workflow_gone
from pipeline.states.teardown import WORKFLOW_DEADLINES


def disarmed(actions: list[object]) -> set[DeadlineKind]:
    return {a.kind for a in actions if isinstance(a, DisarmDeadline)}


def test_every_deadline_of_its_states_is_disarmed_before_the_job_is_finished() -> None:
    for epilog in (Epilog.HELD, Epilog.RELEASED):
        job = JobRecord(jobid=9, workflow="fluxjob-9", observed_rv="41", epilog=epilog)
        actions = list(on_workflow_gone(job, 9))
        assert disarmed(actions) == set(WORKFLOW_DEADLINES)
        assert DeadlineKind.POSTRUN in disarmed(actions)
        assert actions[-1] == FinishJob()

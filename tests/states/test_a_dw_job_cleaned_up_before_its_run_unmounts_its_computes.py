"""A ``#DW`` job cancelled while its RUN waited reaches CLEANUP before anything was
reserved or planned for it — yet its Setup was done, and its PreRun may have gone on at
DWS and made ClientMounts on its computes. ``job.cleanup``'s list still sends each of
them the epilog that starts the clientmount service, so that Teardown sees them
unmounted; a job that never had a Workflow gets none, and its record is finished."""

from __future__ import annotations

from pipeline.model.job import JobRecord
from pipeline.states.actions import FinishJob, SendNodeTask
from pipeline.states.cleanup import on_cleanup


def test_its_computes_start_the_clientmount_service() -> None:
    job = JobRecord(jobid=9, workflow="fluxjob-9", hosts=["c2", "c1"])
    actions = on_cleanup(job, recorded=True, clientmount=True)
    sends = [(a.node, a.kwargs["clientmount"]) for a in actions if isinstance(a, SendNodeTask)]
    assert sends == [("c1", "start"), ("c2", "start")]
    assert not any(isinstance(a, FinishJob) for a in actions)  # its Workflow keeps it


def test_a_job_without_a_workflow_is_only_finished() -> None:
    actions = on_cleanup(JobRecord(jobid=10, hosts=["c1"]), recorded=True, clientmount=True)
    assert actions == [FinishJob()]


def test_a_job_the_store_never_recorded_gets_nothing() -> None:
    assert on_cleanup(JobRecord(jobid=11), recorded=False, clientmount=True) == []

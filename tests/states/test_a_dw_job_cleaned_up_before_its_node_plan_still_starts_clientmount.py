"""A ``#DW`` job whose CLEANUP comes before its node work was planned (cancelled while its
RUN waited, or its RUN died in between) may have ClientMounts on its computes: its PreRun
went on at DWS meanwhile. Each of its computes gets a ``node.epilog`` that starts the
clientmount service, as flux-coral2's epilog runs on every node of the job, so that
Teardown sees them unmounted; a job without ``#DW`` gets none."""

from __future__ import annotations

from pipeline.model.job import JobRecord
from pipeline.states.actions import SendNodeTask
from pipeline.states.nodes import epilogs


def sends(job: JobRecord, clientmount: bool = True) -> list[tuple[str, object]]:
    return [
        (a.node, a.kwargs["clientmount"])
        for a in epilogs(job, None, clientmount=clientmount)
        if isinstance(a, SendNodeTask)
    ]


def test_each_compute_of_an_unplanned_dw_job_starts_clientmount() -> None:
    job = JobRecord(jobid=9, workflow="fluxjob-9", hosts=["c2", "c1"])
    assert sends(job) == [("c1", "start"), ("c2", "start")]


def test_a_job_without_dw_gets_no_epilog() -> None:
    assert sends(JobRecord(jobid=10, hosts=["c1", "c2"])) == []


def test_a_site_without_the_clientmount_service_sends_none() -> None:
    job = JobRecord(jobid=11, workflow="fluxjob-11", hosts=["c1"])
    assert sends(job, clientmount=False) == []

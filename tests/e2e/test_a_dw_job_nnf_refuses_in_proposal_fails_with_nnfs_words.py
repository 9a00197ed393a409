"""A job whose directive nnf refuses in Proposal — a ``profile=`` naming no storage
profile — fails with a job exception quoting nnf's words ("Unable to find
NnfStorageProfile: <name>"), never runs, and leaves no Workflow."""

from __future__ import annotations

from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import event_names, run
from tests.e2e.test_refused_jobs_fail_with_flux_coral2s_exceptions import gone


def test_an_unknown_profile_fails_the_job_with_nnfs_words(system: SimulatedSystem) -> None:
    job = run(system, "#DW jobdw type=xfs capacity=8GiB name=scratch profile=nosuch", n=1)
    assert job.result == "FAILED"
    [fatal] = [e for e in job.exceptions if e["severity"] == 0]
    assert "Unable to find NnfStorageProfile: nosuch" in fatal["note"]
    assert "start" not in event_names(job)
    assert gone(system, job.id, timeout_s=120)

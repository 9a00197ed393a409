"""Copies that real nnf refuses or fails end the job with nnf's own words, and leave
nothing behind: a copy from a path on no global Lustre file system (Proposal), a copy
into job storage whose movement fails (DataIn), and a copy out that fails after the job
ran (DataOut). The job's NnfDataMovements go with its Workflow."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from coral2_sim.demo.metrics import leaks
from coral2_sim.flux.job import FluxJob
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import run, start_system

BROKEN = "/lus/global/broken"
XFS = "#DW jobdw type=xfs capacity=10GiB name=io"


@pytest.fixture(scope="module")
def system() -> Iterator[SimulatedSystem]:
    sim = start_system(failed_copies=(BROKEN,))
    yield sim
    sim.stop()


def exception_notes(job: FluxJob) -> list[str]:
    return [str(e["note"]) for e in job.exceptions]


def nothing_left(system: SimulatedSystem) -> list[str]:
    """What the jobs left (NnfDataMovements included), once deletions have had their time."""
    deadline = time.monotonic() + 60
    while (left := leaks(system)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def test_a_copy_from_no_global_lustre_is_refused_before_the_job_runs(
    system: SimulatedSystem,
) -> None:
    dw = [XFS, "#DW copy_in source=/scratch/u/in destination=$DW_JOB_io/"]
    job = run(system, dw, n=2, timeout_s=120)
    assert job.result == "FAILED"
    assert not job.events("start")
    assert any(
        "global Lustre file system containing '/scratch/u/in' not found" in note
        for note in exception_notes(job)
    ), job.exceptions


def test_a_failed_copy_in_fails_the_job_before_it_runs_quoting_nnf(
    system: SimulatedSystem,
) -> None:
    dw = [XFS, f"#DW copy_in source={BROKEN}/in destination=$DW_JOB_io/"]
    job = run(system, dw, n=2, timeout_s=120)
    assert job.result == "FAILED"
    assert not job.events("start")
    assert any(
        "data movement operation failed during 'DataIn', message: simulated nnf-dm" in note
        for note in exception_notes(job)
    ), job.exceptions


def test_a_failed_copy_out_fails_the_job_after_it_ran_quoting_nnf(
    system: SimulatedSystem,
) -> None:
    dw = [XFS, f"#DW copy_out source=$DW_JOB_io/ destination={BROKEN}/out"]
    job = run(system, dw, n=2, timeout_s=120)
    assert job.events("start")
    assert any(
        "data movement operation failed during 'DataOut'" in note for note in exception_notes(job)
    ), job.exceptions


def test_nothing_is_left_behind(system: SimulatedSystem) -> None:
    assert nothing_left(system) == []

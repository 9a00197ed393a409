"""A DW job of each kind runs through simulated Flux, the pipeline, and the real DWS and
nnf-sos (mock hardware), and completes; its Workflow is then deleted, nnf's finalizer
letting it go once its children are."""

from __future__ import annotations

import time
from typing import Any

import pytest
from coral2_sim.system import SimulatedSystem

from pipeline.errors import NotFound
from tests.e2e.conftest import run

KINDS: dict[str, Any] = {
    "xfs": "#DW jobdw type=xfs capacity=32GiB name=scratch",
    "gfs2": "#DW jobdw type=gfs2 capacity=32GiB name=shared",
    "raw": "#DW jobdw type=raw capacity=32GiB name=blk",
    "lustre": "#DW jobdw type=lustre capacity=100GiB name=lus",
    "two file systems": "#DW jobdw type=xfs capacity=8GiB name=one "
    "#DW jobdw type=gfs2 capacity=8GiB name=two",
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_job_completes(system: SimulatedSystem, kind: str) -> None:
    job = run(system, KINDS[kind], n=2, timeout_s=180)
    assert job.result == "COMPLETED", job.eventlog
    assert system.dws is not None
    deadline = time.monotonic() + 120  # nnf's finalizer deletes its children first
    while True:
        try:
            system.dws.get_workflow(f"fluxjob-{job.id}")
        except NotFound:
            break
        assert time.monotonic() < deadline, f"fluxjob-{job.id} outlived its job"
        time.sleep(0.2)

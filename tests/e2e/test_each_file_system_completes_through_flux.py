"""A DW job of every kind runs through simulated Flux, the pipeline and DWS, and completes."""

from __future__ import annotations

from typing import Any

import pytest
from coral2_sim.system import SimulatedSystem

from pipeline.errors import NotFound
from tests.e2e.conftest import event_names, rpcs, run

KINDS: dict[str, Any] = {
    "xfs": "#DW jobdw type=xfs capacity=32GiB name=scratch",
    "gfs2": "#DW jobdw type=gfs2 capacity=32GiB name=shared",
    "raw": "#DW jobdw type=raw capacity=32GiB name=blk",
    "lustre": "#DW jobdw type=lustre capacity=100GiB name=lus",
    "copy_in and copy_out": [
        "#DW jobdw type=xfs capacity=16GiB name=io",
        "#DW copy_in source=/lus/global/in destination=$DW_JOB_io/",
        "#DW copy_out source=$DW_JOB_io/ destination=/lus/global/out",
    ],
    "two file systems": "#DW jobdw type=xfs capacity=8GiB name=one "
    "#DW jobdw type=gfs2 capacity=8GiB name=two",
    "a preset": "scratch",
}
NAMES = {
    "xfs": ["scratch"],
    "gfs2": ["shared"],
    "raw": ["blk"],
    "lustre": ["lus"],
    "copy_in and copy_out": ["io"],
    "two file systems": ["one", "two"],
    "a preset": ["scratch"],
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_job_completes_with_flux_coral2s_event_sequence(
    system: SimulatedSystem, kind: str
) -> None:
    job = run(system, KINDS[kind])
    assert job.result == "COMPLETED", job.exceptions
    names = event_names(job)
    expected = [
        "dependency-add dws-create",
        "dependency-remove dws-create",
        "prolog-start dws-setup",
        "prolog-finish dws-setup",
        "start",
        "finish",
        "epilog-start dws-epilog",
        "epilog-finish dws-epilog",
        "clean",
    ]
    positions = [names.index(e) for e in expected]
    assert positions == sorted(positions), names
    finishes = [e.context for e in job.eventlog if e.name in ("prolog-finish", "epilog-finish")]
    assert all(c is not None and c["status"] == 0 for c in finishes)
    environment = [e.context for e in job.eventlog if e.name == "dws_environment"]
    assert len(environment) == 1 and environment[0] is not None
    for name in NAMES[kind]:
        assert f"DW_JOB_{name}" in environment[0]["variables"]
    assert job.memo["rabbit_workflow"] == f"fluxjob-{job.id}"
    assert job.memo["rabbits"]
    assert {"rabbit_workflow", "rabbit_proposal_timing", "rabbit_datamovements"} <= set(job.kvs)
    for once in ("resource-update", "prolog-remove", "epilog-remove"):
        assert len(rpcs(system, f"job-manager.dws.{once}", job.id)) == 1, once
    # xfs: one movement per rabbit allocation (one per compute) of each copy, as nnf makes
    copies = 2 * len(job.hosts) if kind == "copy_in and copy_out" else 0
    movements = job.kvs["rabbit_datamovements"]
    assert len(movements) == copies
    assert all(m["status"]["status"] == "Success" for m in movements)


def test_a_job_without_dw_never_touches_dws(system: SimulatedSystem) -> None:
    job = run(system, None)
    assert job.result == "COMPLETED"
    assert not [n for n in event_names(job) if "dws" in n]
    assert system.dws is not None
    with pytest.raises(NotFound):
        system.dws.get_workflow(f"fluxjob-{job.id}")

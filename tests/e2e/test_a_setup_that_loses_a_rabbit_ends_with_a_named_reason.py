"""A job whose rabbit never brings its storage up in Setup, as real nnf shows it: that
rabbit's Servers entry stays not ready. At ``setup_timeout`` the job, which tolerates the
loss, loses the computes behind that rabbit (a ``dws-node-failure`` exception naming them)
and Setup is forced ready; PreRun then finds no storage on that rabbit, nnf's Major error,
a TransientCondition; at ``tc_timeout`` the job fails with an exception that quotes it.
Nothing is left behind: no Workflow, no record, no allocated node.

``setup_timeout`` is long; the test brings the job's Setup deadline due once rabbit1's
storage is up and rabbit2's is not: what the deadline decides is the point, not whether a
busy machine brought rabbit1 up before it fired (had it not, both rabbits would be lost,
beyond the tolerance: ``dws-timeout``)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from coral2_sim.demo.metrics import leaks
from coral2_sim.system import SimulatedSystem

from pipeline.errors import KubeError
from pipeline.model.job import DeadlineKind
from tests.e2e.conftest import bring_due, nodes, start_system

TIMEOUTS = {
    "CORAL2_PIPELINE_RABBIT__SETUP_TIMEOUT": "3600",
    "CORAL2_PIPELINE_RABBIT__TC_TIMEOUT": "3",
}


@pytest.fixture(scope="module")
def system() -> Iterator[SimulatedSystem]:
    sim = start_system(slow_rabbits=("rabbit2",), extra_env=TIMEOUTS)
    yield sim
    sim.stop()


def test_the_job_loses_the_slow_rabbits_computes_then_fails_naming_nnfs_error(
    system: SimulatedSystem,
) -> None:
    assert system.flux is not None
    dw = "#DW jobdw type=xfs capacity=10GiB name=scratch"
    # 17 nodes: compute[01-16] behind rabbit1, compute17 behind rabbit2
    jobid = system.flux.submit(nodes(17), runtime_s=1, system={"dw": dw, "dw_failure_tolerance": 1})
    deadline = time.monotonic() + 120
    while storage_ready(system, jobid) != {"rabbit1": True, "rabbit2": False}:
        assert time.monotonic() < deadline, storage_ready(system, jobid)
        time.sleep(0.1)
    bring_due(system, jobid, DeadlineKind.SETUP)
    assert system.flux.wait_inactive([jobid], 120), leaks(system)
    job = system.flux.job(jobid)
    notes = {e["type"]: e["note"] for e in job.exceptions}
    assert notes.get("dws-node-failure") == "compute17", job.exceptions
    assert "workflow in 'TransientCondition' state too long" in notes.get("exception", "")
    assert "Internal error" in notes["exception"]
    assert job.result == "FAILED"
    assert not job.events("start")  # never ran on a directory nothing was mounted on
    deadline = time.monotonic() + 30
    while (left := leaks(system)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == []


def storage_ready(system: SimulatedSystem, jobid: int) -> dict[str, bool]:
    """Each rabbit's ``ready`` in the job's Servers status (empty: none written yet)."""
    assert system.store is not None and system.dws is not None
    record = system.store.jobs.get(jobid)
    if record is None or record.workflow is None:
        return {}
    try:
        status = system.dws.get("servers", f"{record.workflow}-0").get("status") or {}
    except KubeError:
        return {}
    return {
        rabbit: bool(entry.get("ready"))
        for s in status.get("allocationSets") or []
        for rabbit, entry in (s.get("storage") or {}).items()
    }

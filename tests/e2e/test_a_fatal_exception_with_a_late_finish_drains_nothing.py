"""flux-coral2 #472: a job's tasks may take many minutes to die after a fatal exception.
Its node work and its PostRun clock start at the job's ``finish``, not at the exception:
while the tasks still run, its CXI services stay, its VNIs stay reserved and no
``postrun_timeout`` is armed; once its tasks exit and ``finish`` comes, the job ends
cleanly and no node is drained."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from coral2_sim.system import SimulatedSystem

from pipeline.model.job import DeadlineKind
from pipeline.model.jobid import encode_f58
from tests.e2e.conftest import nodes, start_system

#: how long the killed job's tasks are left dying before the test ends them (s): time
#: for the pipeline to start the job's node work and PostRun clock, were it to do so at
#: the exception
DYING_S = 3.0


@pytest.fixture(scope="module")
def system() -> Iterator[SimulatedSystem]:
    sim = start_system(slingshot=True)
    yield sim
    sim.stop()


def started(system: SimulatedSystem, jobid: int, timeout_s: float = 60) -> None:
    assert system.flux is not None
    deadline = time.monotonic() + timeout_s
    while not system.flux.job(jobid).events("start"):
        assert time.monotonic() < deadline, system.flux.job(jobid).eventlog
        time.sleep(0.05)


def test_the_clock_starts_at_finish_and_nothing_is_drained(system: SimulatedSystem) -> None:
    assert system.flux is not None and system.store is not None
    dw = "#DW jobdw type=xfs capacity=10GiB name=scratch"
    jobid = system.flux.submit(nodes(2), runtime_s=120, system={"dw": dw})
    started(system, jobid)
    system.flux.raise_exception(jobid, "cancel", 0, "", finish_after_s=24 * 3600)
    time.sleep(DYING_S)  # the tasks still run
    assert not system.flux.job(jobid).events("finish")
    assert encode_f58(jobid) in system.store.vnipool.query()["jobs"]  # services still there
    armed = [d.kind for d in system.store.deadlines.pending() if d.jobid == jobid]
    assert DeadlineKind.POSTRUN.value not in armed, armed
    system.flux.tasks_exit(jobid)
    assert system.flux.wait_inactive([jobid], 60)
    job = system.flux.job(jobid)
    assert job.result == "CANCELED"
    assert [e["type"] for e in job.exceptions] == ["cancel"]
    assert not system.flux.resources.drained
    deadline = time.monotonic() + 20
    while encode_f58(jobid) in system.store.vnipool.query()["jobs"]:
        assert time.monotonic() < deadline, "the job's VNIs were never released"
        time.sleep(0.05)

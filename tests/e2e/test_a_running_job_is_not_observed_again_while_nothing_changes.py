"""Every observe of a running rabbit job finishes with the version it read: the version
its last observe acted on (``<prefix>:handled``) is the one it read (``observed_rv``), so
``dws.resync`` has nothing to observe again, however long the job runs — jobs in flight
cost no observe and no API request while DWS and Flux leave them be."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import nodes

DW = "#DW jobdw type=xfs capacity=10GiB name=scratch"


def wait_for(what: str, check: Callable[[], Any], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_the_running_jobs_last_observe_acted_on_what_it_read(system: SimulatedSystem) -> None:
    assert system.flux is not None and system.store is not None
    flux, store = system.flux, system.store
    jobid = flux.submit(nodes(1), system={"dw": DW}, runtime_s=3600)
    wait_for("the job running", lambda: flux.job(jobid).state == "RUN")

    def settled() -> bool:
        record = store.jobs.get(jobid)
        return record is not None and record.state == "PreRun:ready"

    wait_for("its PreRun observed", settled)
    observed_rv, _ = store.jobs.observed()[jobid]
    wait_for("that observe settled", lambda: store.jobs.handled().get(jobid) == observed_rv)
    flux.cancel(jobid)
    assert flux.wait_inactive([jobid], 120)
    wait_for("the job no longer tracked", lambda: jobid not in store.jobs.observed())
    assert jobid not in store.jobs.handled()  # finished with the job's record

"""A rabbit job's run counts each of its transitions — from DWS marking a state ready to
the pipeline's move out of it — once, in the histogram every worker adds to and the
exporter serves (``coral2_transition_seconds{state}``)."""

from __future__ import annotations

import time

from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import run

DW = "#DW jobdw type=xfs capacity=10GiB name=scratch"


def test_each_transition_of_a_rabbit_job_is_counted(system: SimulatedSystem) -> None:
    assert system.store is not None
    before = {s: h.count for s, h in system.store.metrics.transitions().items()}
    job = run(system, DW)
    assert job.result == "COMPLETED"
    deadline = time.monotonic() + 60  # the Workflow is deleted after the job ends
    while True:
        after = {s: h.count for s, h in system.store.metrics.transitions().items()}
        counted = {s: n - before.get(s, 0) for s, n in after.items() if n > before.get(s, 0)}
        if "Teardown" in counted or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    states = ("Proposal", "Setup", "DataIn", "PreRun", "PostRun", "DataOut", "Teardown")
    assert counted == dict.fromkeys(states, 1)

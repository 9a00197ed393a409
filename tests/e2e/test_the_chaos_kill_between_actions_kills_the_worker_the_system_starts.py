"""The chaos harness's "kill the worker between two actions" reaches the worker as the
simulated system starts it (``coral2-pipeline worker``, which installs the kill points):
with jobs coming in all along, the worker SIGKILLs itself at a gap between two actions, the fault
counts as applied only because its death was seen, and the restarted worker ends the
jobs."""

from __future__ import annotations

import random
import threading
from pathlib import Path

from coral2_sim.chaos_faults import Faults, kill_file
from coral2_sim.kill_points import KILL_FILE_VARIABLE

from tests.e2e.conftest import nodes, start_system


def test_the_worker_dies_between_two_actions_and_the_fault_is_counted() -> None:
    trigger = kill_file(seed=4242)
    system = start_system(
        process_env={"worker": {KILL_FILE_VARIABLE: str(trigger)}},
        # what the killed worker held comes back by the ledger's resend: soon, here
        extra_env={"CORAL2_PIPELINE_PIPELINE__RESEND_AFTER": "10"},
    )
    try:
        assert system.flux is not None
        flux = system.flux
        before = system.procs.get("worker").pid
        jobids: list[int] = []
        stop = threading.Event()

        def submit() -> None:  # jobs keep coming, so that tasks keep acting
            while not stop.is_set():
                jobids.append(flux.submit(nodes(2)))
                stop.wait(0.3)

        feeder = threading.Thread(target=submit, daemon=True)
        feeder.start()
        kinds = ("kill worker between actions",)
        faults = Faults(system, random.Random(1), every_s=3600.0, kinds=kinds)
        try:
            assert faults.apply("kill worker between actions") is True
        finally:
            stop.set()
            feeder.join()
        assert system.procs.get("worker").pid != before  # killed, and started again
        log = Path(system.workdir / "worker.log").read_text(errors="replace")
        assert f"({KILL_FILE_VARIABLE})" in log  # it died at a gap between two actions
        assert system.flux.wait_inactive(jobids, 300), "the jobs did not end after the kill"
    finally:
        system.stop()

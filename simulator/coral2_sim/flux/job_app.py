"""What each job of ``coral2-pipeline demo --flux real`` runs, as the simulated job
manager's jobs do (:mod:`coral2_sim.flux.libfabric`): the job's first task joins a
hardware collective when the job has one (its ``hwcoll`` event names a fabric-manager job,
and the job's KVS holds the environment, read with ``flux job info``), then every task
runs for RUNTIME seconds.

    python -m coral2_sim.flux.job_app RUNTIME
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from coral2_sim.flux.libfabric import join_collective

#: How long the first task looks for the job's ``hwcoll`` event (s), as the simulated
#: application does.
WAIT_S = 2.0


def _flux(*args: str) -> str:
    return subprocess.run(
        ["flux", *args], capture_output=True, text=True, check=False, timeout=30
    ).stdout


def join() -> None:
    """Join a collective when the job has hardware collectives."""
    jobid = os.environ["FLUX_JOB_ID"]
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for line in _flux("job", "eventlog", "--format=json", jobid).splitlines():
            event = json.loads(line)
            if event.get("name") != "hwcoll":
                continue
            if not (event.get("context") or {}).get("jobID"):
                return  # the event says it has none
            env = json.loads(_flux("job", "info", jobid, "hwcoll_environment"))
            join_collective(env, int(os.environ.get("FLUX_JOB_NNODES", "1")))
            return
        time.sleep(0.05)


def main(argv: list[str]) -> int:
    runtime = float(argv[1]) if len(argv) > 1 else 0.3
    if os.environ.get("FLUX_TASK_RANK", "0") == "0":
        join()
    time.sleep(runtime)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

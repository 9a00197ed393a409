"""On the real Flux, a job of two nodes or more gets hardware collectives: the pipeline
reserves them at the fabric manager, puts the libfabric environment in the job's KVS and
then posts the ``hwcoll`` event; the job itself waits for the event, reads the
environment (``flux job info``, as a user's job can) and joins a collective; at CLEANUP
the reservation and the job's multicast trees are released."""

from __future__ import annotations

import json
import time
from pathlib import Path

from coral2_sim.flux.libfabric import join_collective

from tests.flux.conftest import Tier


def test_the_job_reads_its_environment_and_its_trees_are_released(
    tier: Tier, tmp_path: Path
) -> None:
    out, gate = tmp_path / "env", tmp_path / "gate"
    script = (
        "flux job wait-event $FLUX_JOB_ID hwcoll && flux job info $FLUX_JOB_ID"
        f" hwcoll_environment >{out}.$FLUX_TASK_RANK.tmp && mv {out}.$FLUX_TASK_RANK.tmp"
        f" {out}.$FLUX_TASK_RANK; while [ ! -e {gate} ]; do sleep 0.05; done"
    )
    jobid = tier.submit("-N2", "-n2", "sh", "-c", script)
    tier.flux.flux("job", "wait-event", "-t", "120", str(jobid), "start")
    [event] = [e for e in tier.events(jobid) if e["name"] == "hwcoll"]
    assert event["context"]["jobID"]
    deadline = time.monotonic() + 60
    while not (Path(f"{out}.0").exists() and Path(f"{out}.1").exists()):
        assert time.monotonic() < deadline, tier.output(jobid)
        time.sleep(0.05)
    env = json.loads(Path(f"{out}.0").read_text())
    assert env == json.loads(Path(f"{out}.1").read_text())
    assert env["FI_CXI_COLL_JOB_ID"] == event["context"]["jobID"]
    assert join_collective(env, 2) is not None
    assert tier.system.fabric is not None and tier.system.fabric.tree_count() == 1
    gate.touch()
    tier.wait_inactive(jobid)
    assert tier.settled() == []

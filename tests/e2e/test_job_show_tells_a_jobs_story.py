"""``coral2-pipeline job show JOBID`` tells a finished rabbit job's story in order: Flux's
requests, each state of its Workflow, our task runs with their attempts, the messages
sent to Flux — with the Workflow's token redacted from the prolog's variables — and
nothing left pending; ``--json`` says the same as data. A job the store never saw is
said so, exit 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import run

DW = "#DW jobdw type=xfs capacity=10GiB name=scratch"


def job_show(system: SimulatedSystem, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in system.env().items() if k.startswith("CORAL2_")}
    base = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_")}
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "job", "show", *args],
        env=base | env | {"COLUMNS": "250"},
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )


def story(system: SimulatedSystem, jobid: int) -> dict[str, Any]:
    """The job's story once its Workflow is deleted (after the job ends)."""
    deadline = time.monotonic() + 60
    while True:
        done = job_show(system, str(jobid), "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        told = json.loads(done.stdout)
        if any(e["what"].startswith("Teardown ready") for e in told["timeline"]):
            return told
        assert time.monotonic() < deadline, told
        time.sleep(0.2)


def test_a_rabbit_jobs_story_is_told_in_order(system: SimulatedSystem) -> None:
    job = run(system, DW)
    told = story(system, job.id)
    whats = [f"{e['source']}: {e['what']}" for e in told["timeline"]]
    firsts = [
        "flux: dws.create: a #DW job submitted",
        "dws: Proposal ready",
        "flux: dws.setup: the job allocated, Setup asked",
        "dws: Setup ready",
        "dws: DataIn ready",
        "dws: PreRun ready",
        "sent: prolog-remove",
        "flux: dws.post_run: the job's tasks ended, PostRun asked",
        "dws: PostRun ready",
        "dws: DataOut ready",
        "dws: Teardown ready",
    ]
    positions = [next(i for i, w in enumerate(whats) if w.startswith(f)) for f in firsts]
    assert positions == sorted(positions), whats
    assert [e["at"] for e in told["timeline"]] == sorted(e["at"] for e in told["timeline"])
    assert "task: dws.create run 1: done" in whats
    assert told["pending"] == {"to_flux": [], "tasks": [], "deadlines": {}}
    nodes = told["slingshot"]["nodes"]
    assert len(nodes) == 2  # the job's two computes
    assert set(nodes.values()) == {"services gone"}
    assert told["workflow"] == f"fluxjob-{job.id}"


def test_the_screen_shows_the_timeline(system: SimulatedSystem) -> None:
    job = run(system, DW)
    story(system, job.id)
    done = job_show(system, str(job.id))
    assert done.returncode == 0, done.stderr
    assert f"job {job.id}" in done.stdout
    assert "Setup ready" in done.stdout
    assert "pending: nothing" in done.stdout


def test_a_job_never_seen_is_said_so(system: SimulatedSystem) -> None:
    done = job_show(system, "999999999")
    assert done.returncode == 1
    assert "no trace of job 999999999" in done.stdout

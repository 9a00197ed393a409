"""A Storage disabled (``spec.state: Disabled``, as the pipeline writes it when a
Workflow would not tear down) is given status Disabled by nnf-sos's Storage reconciler,
"Storage node manually disabled": the pipeline takes its ssds down in Flux, so a new
``#DW`` job that needs it waits in SCHED, and ``status`` names the rabbit and why. Once
an admin enables it again, its ssds come up and the job runs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import MAPPING, nodes

DW = "#DW jobdw type=xfs capacity=10GiB name=scratch"


def until(condition: Callable[[], bool], what: str, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def health(system: SimulatedSystem, rabbit: str) -> dict[str, Any]:
    """The rabbit's health as the pipeline's last Storage observe recorded it."""
    assert system.store is not None
    raw = system.store.client.hget(system.store.keys.rabbits, rabbit)
    return json.loads(raw) if raw else {}


def status_text(system: SimulatedSystem) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "status", "--json"],
        env=system.env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return " ".join(json.loads(done.stdout)["flags"])  # the flags whole, never folded


def test_a_new_job_waits_while_every_rabbit_is_disabled_and_runs_once_enabled(
    system: SimulatedSystem,
) -> None:
    assert system.flux is not None and system.dws is not None and system.store is not None
    rabbits = list(MAPPING.rabbits)
    body = {
        "metadata": {"annotations": {"disable_reason": "job 5's Teardown would not end"}},
        "spec": {"state": "Disabled"},
    }
    try:
        for rabbit in rabbits:
            system.dws.patch("storages", rabbit, body)
        for rabbit in rabbits:  # nnf's Storage reconciler, then the pipeline's observe
            until(
                lambda r=rabbit: health(system, r).get("status") == "Disabled",
                f"{rabbit} seen Disabled",
            )
        storage = system.dws.get("storages", rabbits[0])
        assert storage["status"]["message"] == "Storage node manually disabled"

        jobid = system.flux.submit(nodes(1), system={"dw": DW})
        until(lambda: system.flux.job(jobid).state == "SCHED", "the job in SCHED")
        looked = system.flux.passes
        until(lambda: system.flux.passes >= looked + 3, "the scheduler to look at it again")
        assert system.flux.job(jobid).state == "SCHED"
        shown = status_text(system)
        for rabbit in rabbits:
            assert f"rabbit {rabbit} is Disabled" in shown
        assert "job 5's Teardown would not end" in shown
    finally:  # enabled again whatever happened: the next test's jobs need them
        for rabbit in rabbits:
            system.dws.patch("storages", rabbit, {"spec": {"state": "Enabled"}})
    assert system.flux.wait_inactive([jobid], 120), system.flux.job(jobid).eventlog
    assert system.flux.job(jobid).result == "COMPLETED"
    assert system.dws.get("storages", rabbits[0])["status"]["status"] == "Ready"

"""A whole simulated system with Flux for the lifecycle tests (one per module)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from coral2_sim.demo.model import sample_path
from coral2_sim.flux.job import FluxJob
from coral2_sim.system import SimulatedSystem

from pipeline.errors import NotFound
from pipeline.model.job import DeadlineKind
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.store.deadlines import Deadline

MAPPING = RabbitMapping.load(sample_path("sample-rabbitmapping.json"))
CONFIG = str(sample_path("sample-cluster.toml"))
TASK = {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}


def nodes(n: int) -> list[dict[str, Any]]:
    """Jobspec resources for ``n`` nodes."""
    return [{"type": "node", "count": n, "with": [TASK]}]


def start_system(**options: Any) -> SimulatedSystem:
    """A started system; a start that fails stops what it started (its ``__enter__``)."""
    return SimulatedSystem(
        MAPPING,
        observe_only=False,
        with_flux=True,
        node_workers=True,
        config=CONFIG,
        latency_s=0.001,
        **options,
    ).__enter__()


#: The last lines of each process's log shown under a failed test.
LOG_TAIL = 40


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test that used a simulated system shows the end of each process's log and
    the eventlog of each job it did not see end: what the system was doing."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    sim = getattr(item, "funcargs", {}).get("system")
    if not report.failed or not isinstance(sim, SimulatedSystem):
        return
    for log in sorted(sim.workdir.glob("*.log")):
        lines = log.read_text(errors="replace").splitlines()[-LOG_TAIL:]
        report.sections.append((f"end of {log.name}", "\n".join(lines)))
    if sim.flux is not None:
        with sim.flux.lock:
            stuck = [job for job in sim.flux.jobs.values() if job.state != "INACTIVE"]
            text = "\n".join(f"{job.id} {job.state}: {event_names(job)}" for job in stuck)
        report.sections.append(("jobs not inactive", text or "none"))
        for job in stuck:
            report.sections.append((f"job {job.id}", story(sim, job.id)))


def story(sim: SimulatedSystem, jobid: int) -> str:
    """What the pipeline says of one job (``coral2-pipeline job show``) and where its
    Workflow stands."""
    shown = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "job", "show", str(jobid)],
        check=False,
        env={
            **os.environ,
            "COLUMNS": "160",
            **sim.env(),
            **(sim.role_env("monitoring") if sim.users else {}),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    text = shown.stdout + shown.stderr
    if sim.dws is not None:
        try:
            workflow = sim.dws.get_workflow(f"fluxjob-{jobid}")
        except NotFound:
            return text + "\nWorkflow: gone"
        keep = ("desiredState", "state", "status", "message", "ready")
        text += f"\nWorkflow spec: {workflow.get('spec', {}).get('desiredState')}"
        text += f"\nWorkflow status: { {k: workflow.get('status', {}).get(k) for k in keep} }"
        text += f"\nWorkflow finalizers: {workflow['metadata'].get('finalizers')}"
        text += f"\nWorkflow deleting: {workflow['metadata'].get('deletionTimestamp')}"
    return text


@pytest.fixture(scope="module")
def system() -> Iterator[SimulatedSystem]:
    sim = start_system()
    yield sim
    sim.stop()


def run(system: SimulatedSystem, dw: Any, n: int = 2, timeout_s: float = 240) -> FluxJob:
    """Submit one job with ``dw`` (None: no #DW) and wait until it is inactive."""
    assert system.flux is not None
    jobid = system.flux.submit(nodes(n), system={} if dw is None else {"dw": dw})
    assert system.flux.wait_inactive([jobid], timeout_s), system.flux.job(jobid).eventlog
    return system.flux.job(jobid)


def rpcs(system: SimulatedSystem, topic: str, jobid: int) -> list[dict[str, Any]]:
    """The payloads of every ``topic`` RPC the bridge delivered for ``jobid``."""
    assert system.flux is not None
    with system.flux.lock:
        return [p for t, p in system.flux.received if t == topic and p.get("id") == jobid]


def event_names(job: FluxJob) -> list[str]:
    """Event names, with the action for prolog/epilog events: ``prolog-start dws-setup``."""
    out = []
    for e in job.eventlog:
        description = (e.context or {}).get("description")
        out.append(f"{e.name} {description}" if description else e.name)
    return out


def bring_due(system: SimulatedSystem, jobid: int, kind: DeadlineKind) -> Deadline:
    """Wait until the job's deadline ``kind`` is armed, then make it due now, as a clock
    reaching it would: a test of what a deadline decides arms it far away and fires it
    when the state it is about is there, not when a busy machine happens to get there."""
    assert system.store is not None
    wait = time.monotonic() + 120
    while time.monotonic() < wait:
        for armed in system.store.deadlines.pending():
            if (armed.jobid, armed.kind) == (jobid, kind.value):
                now = time.time()
                system.store.deadlines.add(Deadline(jobid, armed.kind, armed.token, now), now=now)
                return armed
        time.sleep(0.1)
    raise AssertionError(f"job {jobid} never had its {kind.value} deadline armed")

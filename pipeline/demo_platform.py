"""The platform part of ``coral2-pipeline demo``: raw Workflows through the live pipeline.

A minimal WLM (``pipeline.sim.wlm``) drives a handful of Workflows through
every DWS state on the simulated system. It never polls the API server
for readiness: it waits for the job record that ``dws.observe`` writes in
Redis, so each transition goes DWS controller → API server → watcher →
Celery → observe task → Redis, and the latency shown is that whole path.
The pipeline runs in observe-only mode here, since this WLM, not the
lifecycle, moves the Workflows.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table

from pipeline.model.rabbitmap import RabbitMapping
from pipeline.sim.system import SimulatedSystem
from pipeline.sim.wlm import STATES, step, workflow_body

DIRECTIVES: tuple[list[str], ...] = (
    ["#DW jobdw type=xfs capacity=64GiB name=scratch"],
    ["#DW jobdw type=gfs2 capacity=128GiB name=shared"],
    [
        "#DW jobdw type=lustre capacity=2TiB name=lus",
        "#DW copy_in source=/lus/global/in destination=$DW_JOB_lus/",
    ],
    ["#DW jobdw type=raw capacity=256GiB name=blk"],
    [],
)


@dataclass
class Run:
    """One Workflow being driven."""

    jobid: int
    directives: list[str]
    hosts: list[str]
    state: str = "Proposal"
    asked: float = field(default_factory=time.monotonic)
    done: bool = False
    latencies_ms: list[float] = field(default_factory=list)
    by_state: dict[str, float] = field(default_factory=dict)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return (
        ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]
        if ordered
        else 0.0
    )


def leaks(system: SimulatedSystem) -> list[str]:
    """What the run left behind; empty when clean."""
    assert system.dws is not None and system.store is not None
    found: list[str] = []
    workflows, _ = system.dws.list_objects("workflows")
    found += [f"workflow {w['metadata']['name']}" for w in workflows]
    servers, _ = system.dws.list_objects("servers")
    found += [f"servers {s['metadata']['name']}" for s in servers]
    mounts, _ = system.dws.list_objects("clientmounts", all_namespaces=True)
    found += [f"clientmount {m['metadata']['namespace']}/{m['metadata']['name']}" for m in mounts]
    client, keys = system.store.client, system.store.keys
    found += [f"lock {k.decode()}" for k in client.scan_iter(f"{keys.prefix}:lock:*")]
    if system.store.outbox.backlog():
        found.append(f"outbox backlog {system.store.outbox.backlog()}")
    return found


def run_platform_demo(
    console: Console, mapping: RabbitMapping, *, workflows: int = 8, timeout_s: float = 120
) -> int:
    """Drive ``workflows`` raw Workflows through every state; return 0 when all finished clean."""
    console.rule("the platform: API server, DWS controller, watcher, Celery worker and beat")
    computes = list(mapping.computes)
    with SimulatedSystem(mapping) as system:
        assert system.dws is not None and system.store is not None
        runs = []
        hosts = itertools.cycle(range(0, len(computes), 4))
        for i in range(workflows):
            start = next(hosts)
            run = Run(5000 + i, DIRECTIVES[i % len(DIRECTIVES)], computes[start : start + 4])
            system.dws.create_workflow(workflow_body(run.jobid, run.directives))
            runs.append(run)
        started = time.monotonic()
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} transitions"),
            console=console,
            transient=True,
        ) as progress:
            bar = progress.add_task("workflows", total=workflows * len(STATES))
            while not all(r.done for r in runs):
                if time.monotonic() - started > timeout_s or system.alive():
                    break
                for run in runs:
                    if run.done:
                        continue
                    record = system.store.jobs.get(run.jobid)
                    if record is None or record.state != f"{run.state}:ready":
                        continue
                    run.latencies_ms.append((time.monotonic() - run.asked) * 1000)
                    run.by_state[run.state] = run.latencies_ms[-1]
                    step(system.dws, f"fluxjob-{run.jobid}", run.state, mapping, run.hosts)
                    progress.advance(bar)
                    if run.state == "Teardown":
                        run.done = True
                    else:
                        run.state = STATES[STATES.index(run.state) + 1]
                        run.asked = time.monotonic()
                time.sleep(0.005)
        wall = time.monotonic() - started
        time.sleep(0.5)
        dead = system.alive()
        leftover = leaks(system)
    latencies = [x for r in runs for x in r.latencies_ms]
    table = Table(title="raw Workflows through the live pipeline")
    for column in (
        "workflows",
        "finished",
        "transitions",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "wall s",
        "leaks",
    ):
        table.add_column(column)
    finished = sum(r.done for r in runs)
    quantiles = [f"{_percentile(latencies, q):.0f}" for q in (50, 95, 99)]
    table.add_row(
        str(workflows),
        str(finished),
        str(len(latencies)),
        *quantiles,
        f"{wall:.1f}",
        str(len(leftover)),
    )
    console.print(table)
    per_state = Table(title="latency by state (ms)")
    per_state.add_column("")
    for state in STATES:
        per_state.add_column(state)
    for q in (50, 95):
        per_state.add_row(
            f"p{q}",
            *(
                f"{_percentile([r.by_state[st] for r in runs if st in r.by_state], q):.0f}"
                for st in STATES
            ),
        )
    console.print(per_state)
    console.print(
        "  latency: from the WLM's desiredState patch to the observe task recording the state ready"
    )
    for item in leftover + [f"process {name} died" for name in dead]:
        console.print(f"  [red]leak:[/red] {item}")
    console.print(f"platform: {finished}/{workflows} workflows finished, {len(leftover)} leaks")
    return 0 if finished == workflows and not leftover and not dead else 1

"""The lifecycle part of ``coral2-pipeline demo``: a mixed batch through the whole system.

Starts the whole simulated system — redis-server, the API server with the
DWS webhooks and controller, the Celery worker and beat, the watcher, a
simulated node worker (the clientmount daemon of every compute) and the
simulated Flux job manager with the dws-jobtap behaviour — submits a mixed
batch of jobs to Flux, and reports outcomes, transition latency and leaks.
"""

from __future__ import annotations

import json
import secrets
import shlex
import shutil
import signal
import sys
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from coral2_sim.demo.batch import BROKEN_COPIES, BUSY_UID, DemoJob, batch, left_out_on_real_dws
from coral2_sim.demo.dws_cases import dws_cases
from coral2_sim.demo.fabric_outage import start_outage
from coral2_sim.demo.fabric_outage import summary as fabric_summary
from coral2_sim.demo.metrics import PIPELINE_DRIVEN, TransitionClock, leaks, percentile
from coral2_sim.demo.outage import rabbit_outage
from coral2_sim.demo.sweep import BUSY_ENV, sweep_busy_nodes
from coral2_sim.flux.job import FluxJob
from coral2_sim.redis_server import free_port
from coral2_sim.system import SimulatedSystem
from pipeline.model.rabbitmap import RabbitMapping

if TYPE_CHECKING:
    from pipeline.clients.flux_site import FluxSite

#: jobs of this many nodes or more get hardware collectives in the demo
HWCOLL_MIN_NODES = 2


@dataclass
class Report:
    """The demo's result; :meth:`as_json` is what ``--json`` prints."""

    submitted: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    by_state_ms: dict[str, list[float]] = field(default_factory=dict)
    leaks: list[str] = field(default_factory=list)
    swept: list[str] = field(default_factory=list)
    outage: list[str] = field(default_factory=list)
    #: the cases where real DWS makes jobs fail or wait (demo/dws_cases.py)
    dws: list[str] = field(default_factory=list)
    hwcoll: list[str] = field(default_factory=list)
    jobids: list[int] = field(default_factory=list)
    wall_s: float = 0.0
    #: the versions of the real Flux the batch ran on (empty: the simulated one)
    flux: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.unexpected and not self.leaks

    def quantiles(self, values: list[float]) -> dict[str, float]:
        return {f"p{q}": round(percentile(values, q), 1) for q in (50, 95, 99)}

    def as_json(self) -> dict[str, Any]:
        return {
            "jobs": {
                "submitted": self.submitted,
                "completed": self.outcomes["COMPLETED"],
                "failed": self.outcomes["FAILED"],
                "cancelled": self.outcomes["CANCELED"],
                "unexpected": self.unexpected,
            },
            "latency_ms": self.quantiles(self.latency_ms),
            "latency_by_state_ms": {s: self.quantiles(v) for s, v in self.by_state_ms.items()},
            "leaks": self.leaks,
            "swept": self.swept,
            "rabbit_outage": self.outage,
            "dws_cases": self.dws,
            "hwcoll": self.hwcoll,
            "wall_s": round(self.wall_s, 2),
            "flux": self.flux or "simulated",
        }


def outcome_problem(job: DemoJob, flux_job: FluxJob) -> str | None:
    """Why ``flux_job`` did not end as ``job`` says it must (None when it did)."""
    fatal = [e["note"] for e in flux_job.exceptions if e["severity"] == 0]
    if job.or_refused and flux_job.result == "FAILED" and any(job.or_refused in n for n in fatal):
        return None
    if flux_job.result != job.expect:
        why = f": {fatal[0]}" if fatal else ""
        return f"{job.kind} job {flux_job.id} ended {flux_job.result}, expected {job.expect}{why}"
    if job.note and not any(job.note in n for n in fatal):
        return f"{job.kind} job {flux_job.id} failed without {job.note!r}: {fatal}"
    return None


#: Between two submissions of the batch, seconds: a steady stream of jobs, as users submit
#: them, so that the latency table shows what one transition costs the pipeline rather than
#: the queue of a whole batch arriving in one instant.
ARRIVAL_S = 0.25


def _drive(system: SimulatedSystem, jobs: list[DemoJob], console: Console, quiet: bool) -> Report:
    assert system.flux is not None
    flux = system.flux
    report = Report(submitted=len(jobs))
    start_outage(system)  # the fabric manager goes down in the middle of the batch
    ids: list[int] = []
    to_cancel: set[int] = set()
    next_at = time.monotonic()
    deadline = time.monotonic() + 120 + 2 * len(jobs) + ARRIVAL_S * len(jobs)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} jobs inactive"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=quiet,
    ) as progress:
        bar = progress.add_task("jobs", total=len(jobs))
        while time.monotonic() < deadline and not system.alive():
            if len(ids) < len(jobs) and time.monotonic() >= next_at:
                # users submit one after another, not all in one instant
                job = jobs[len(ids)]
                ids.append(
                    flux.submit(
                        job.resources(), system=job.system(), userid=job.userid, runtime_s=0.3
                    )
                )
                to_cancel |= {ids[-1]} if job.cancel else set()
                next_at += ARRIVAL_S
            with flux.lock:
                states = Counter(flux.jobs[i].state for i in ids)
                for jobid in list(to_cancel):
                    if flux.jobs[jobid].memo.get("rabbit_workflow"):  # its Workflow exists
                        flux.cancel(jobid)
                        to_cancel.discard(jobid)
            progress.update(
                bar,
                completed=states["INACTIVE"],
                description=" ".join(f"{s}:{n}" for s, n in sorted(states.items())),
            )
            if states["INACTIVE"] == len(jobs):
                break
            time.sleep(0.02)
    report.jobids = ids
    for job, jobid in zip(jobs, ids, strict=True):
        flux_job = flux.job(jobid)
        report.outcomes[flux_job.result if flux_job.state == "INACTIVE" else "UNFINISHED"] += 1
        problem = outcome_problem(job, flux_job)
        if problem:
            report.unexpected.append(problem)
    return report


def _print(console: Console, report: Report) -> None:
    outcome = Table(title="jobs by outcome")
    for column in ("submitted", "completed", "failed", "cancelled", "unexpected", "wall s"):
        outcome.add_column(column, justify="right")
    outcome.add_row(
        str(report.submitted),
        str(report.outcomes["COMPLETED"]),
        str(report.outcomes["FAILED"]),
        str(report.outcomes["CANCELED"]),
        str(len(report.unexpected)),
        f"{report.wall_s:.1f}",
    )
    console.print(outcome)
    intended = report.outcomes["FAILED"] + report.outcomes["CANCELED"]
    if intended and not report.unexpected:
        console.print(
            f"  the {intended} failed or cancelled jobs are the batch's intended failures (a "
            "bad directive, a cancel, an outage, …): each ended as its case means it to",
            soft_wrap=True,
            highlight=False,
        )
    latency = Table(title="transition latency, ms: DWS shows the state ready → our next patch")
    for column in ("state", "transitions", "p50", "p95", "p99"):
        latency.add_column(column, justify="right")
    for state in PIPELINE_DRIVEN:
        values = report.by_state_ms.get(state, [])
        q = report.quantiles(values)
        latency.add_row(state, str(len(values)), *(f"{q[k]:.0f}" for k in ("p50", "p95", "p99")))
    q = report.quantiles(report.latency_ms)
    latency.add_row(
        "all", str(len(report.latency_ms)), *(f"{q[k]:.0f}" for k in ("p50", "p95", "p99"))
    )
    console.print(latency)
    for line in report.swept:
        console.print(f"  busy CXI services: {line}", soft_wrap=True, highlight=False)
    for line in report.outage:
        console.print(f"  rabbit outage: {line}", soft_wrap=True, highlight=False)
    for line in report.dws:
        console.print(f"  DWS as it is: {line}", soft_wrap=True, highlight=False)
    for line in report.hwcoll:
        console.print(f"  hardware collectives: {line}", soft_wrap=True, highlight=False)
    for problem in report.unexpected:
        console.print(f"  [red]unexpected:[/red] {problem}", soft_wrap=True)
    for item in report.leaks:
        console.print(f"  [red]leak:[/red] {item}", soft_wrap=True)
    verdict = "[green]clean[/green]" if report.ok else "[red]NOT clean[/red]"
    console.print(
        f"lifecycle: {report.submitted} jobs, {len(report.unexpected)} unexpected outcomes, "
        f"{len(report.leaks)} leaks — {verdict}"
    )


def _keep_running(system: SimulatedSystem, console: Console) -> None:
    port = free_port()
    argv = [sys.executable, "-m", "pipeline.cli", "flower", "--"]
    password = secrets.token_urlsafe(12)  # Flower's UI and API behind basic auth
    # as a site runs it: no key (the signing settings unset), its own Redis user
    unsigned = dict.fromkeys((k for k in system.extra_env if "SECURITY" in k or "SITE_CA" in k), "")
    system.process_env["flower"] = {
        **unsigned,
        **system.role_env("flower"),
        "FLOWER_BASIC_AUTH": f"admin:{password}",
    }
    system.spawn("flower", [*argv, "--address=127.0.0.1", f"--port={port}"])
    assert system.app is not None  # the harness holds the management key: it may ask
    system.app.control.enable_events()
    assert system.kube is not None
    console.print(f"Flower:     http://127.0.0.1:{port}/  (user admin, password {password})")
    metrics = free_port()  # the exporter, as the monitoring user
    system.process_env["exporter"] = system.role_env("monitoring")
    exporter = [sys.executable, "-m", "pipeline.cli", "exporter", "--port", str(metrics)]
    system.spawn("exporter", exporter)
    console.print(f"metrics:    http://127.0.0.1:{metrics}/metrics")
    config = system.kube.admin_kubeconfig
    console.print(f"API server: {system.kube.url}   Redis: {system.redis_url}")
    console.print(f"kubectl:    export KUBECONFIG={config}; kubectl get storages -A")
    console.print(f"logs:       {system.workdir}")
    # each line pasted whole into a shell runs (every value quoted; the command by its
    # path, which a fresh clone does not have on PATH)
    cli = shlex.quote(str(Path(sys.executable).parent / "coral2-pipeline"))
    login = {
        "CORAL2_PIPELINE_PIPELINE__BROKER_URL": system.redis_url,
        "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": system.prefix,
        **system.role_env("monitoring"),
    }
    console.print(
        f"status:     {_assignments(login)} {cli} status", soft_wrap=True, highlight=False
    )
    management = {k: v for k, v in system.env().items() if k.startswith("CORAL2_PIPELINE_")}
    console.print(  # what a management host's worker.toml holds, for the runbook's commands
        f"management: {_assignments(management)} {cli} slingshot pool",
        soft_wrap=True,
        highlight=False,
    )
    console.print("running; Ctrl-C stops every process the demo started")
    while True:
        time.sleep(3600)


def _assignments(env: dict[str, str]) -> str:
    """``env`` as a shell's ``NAME=value`` words, each value quoted as it must be."""
    return " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))


def _run(
    system: SimulatedSystem,
    console: Console,
    jobs: int,
    *,
    quiet: bool,
    sweep: bool,
    cases: bool = True,
) -> Report:
    """The rabbit outage, the batch, the busy node's sweep (``sweep``); then the report.

    The outage comes first, while no job has used the rabbit: Fluxion 0.54 refuses a job
    held for a rabbit whose ssds were allocated and freed before they went down
    (``match error``, docs/performance.md), where it must hold it in SCHED."""
    assert system.kube is not None
    clock = TransitionClock(system.kube.api()).start()
    started = time.monotonic()
    real_dws = system.dws_stack == "real"
    outage, outage_problem = (
        (
            [
                "not run on the real DWS: it writes a Storage's status, which the real nnf-sos "
                "writes back"
            ],
            "",
        )
        if real_dws
        else rabbit_outage(system)
    )
    shown, case_problems = dws_cases(system) if cases and system.with_flux else ([], [])
    mix = batch(jobs, real_dws=real_dws)
    report = _drive(system, mix, console, quiet=quiet)
    report.outage = outage
    report.dws = shown + (left_out_on_real_dws() if real_dws else [])
    report.unexpected += [outage_problem] if outage_problem else []
    report.unexpected += case_problems
    if any(j.userid == BUSY_UID for j in mix) and sweep:
        report.swept, problem = sweep_busy_nodes(system)
        report.unexpected += [problem] if problem else []
    report.wall_s = time.monotonic() - started
    settle = time.monotonic() + 15  # Workflow deletion finishes after the jobs end
    while leaks(system) and time.monotonic() < settle:
        time.sleep(0.1)
    clock.stop()
    report.by_state_ms = dict(clock.samples)
    report.latency_ms = clock.all_samples()
    report.leaks = leaks(system) + [f"process {p} died" for p in system.alive()]
    report.hwcoll = fabric_summary(system, report.jobids)
    report.unexpected += system.acl_denials()
    report.unexpected += [f"the API server refused: {m}" for m in system.api_refusals()]
    return report


def demo_system(
    mapping: RabbitMapping,
    *,
    config: str | None,
    real_flux: bool = False,
    systemstatus: bool = True,
    dws: str = "sim",
) -> SimulatedSystem:
    """The demo's system, not started: every process as production runs it (signing, a
    Redis user per role, RBAC), Slingshot, node workers, the fabric manager;
    ``systemstatus=False``: a DWS without SystemStatus ``default``; ``dws="real"``: the
    real DWS and nnf-sos (:mod:`coral2_sim.dws_real`)."""
    return SimulatedSystem(
        mapping,
        observe_only=False,
        with_flux=not real_flux,
        node_workers=True,
        slingshot=True,
        signing=True,
        acl=True,
        config=config,
        # a real test instance runs its owner's jobs only: no busy user's job
        cxi_busy=() if real_flux else (BUSY_UID,),
        extra_env={**BUSY_ENV, "CORAL2_PIPELINE_HWCOLL__RELEASE_RETRY": "1"},
        hwcoll_min_nodes=HWCOLL_MIN_NODES,
        failed_copies=(BROKEN_COPIES,),
        systemstatus=systemstatus,
        dws_stack="real" if dws == "real" else "simulated",
    )


def run_batch(
    system: SimulatedSystem,
    console: Console,
    jobs: int = 24,
    *,
    sweep: bool = True,
    cases: bool = True,
) -> Report:
    """The demo's run on a started system (quiet): the outage, the DWS cases (``cases``),
    the batch, the sweep."""
    return _run(system, console, jobs, quiet=True, sweep=sweep, cases=cases)


def _kept(console: Console, workdir: Path, *, quiet: bool) -> None:
    if not quiet:
        console.print(f"kept: {workdir} (logs, and the keys and passwords made for the run)")


def run_lifecycle_demo(
    console: Console,
    mapping: RabbitMapping,
    *,
    config: str | None,
    jobs: int = 24,
    as_json: bool = False,
    keep_running: bool = False,
    flux_site: FluxSite | None = None,
    keep: bool = False,
    systemstatus: bool = True,
    dws: str = "sim",
) -> int:
    """Run the batch; print the summary (or JSON); return 0 when clean and as expected.
    ``flux_site``: on that real Flux (:mod:`coral2_sim.demo.real`). The work directory
    (logs, the keys and passwords made for the run) is removed at exit unless ``keep`` or
    ``keep_running``."""
    real = flux_site is not None

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupted)
    try:
        with ExitStack() as stack:
            made = demo_system(
                mapping, config=config, real_flux=real, systemstatus=systemstatus, dws=dws
            )
            # last, once every process stopped: the run's keys and passwords go with it
            if keep or keep_running:
                stack.callback(_kept, console, made.workdir, quiet=as_json)
            else:
                stack.callback(shutil.rmtree, made.workdir, ignore_errors=True)
            system = stack.enter_context(made)
            found: dict[str, str] = {}
            if flux_site is not None:
                from coral2_sim.demo.real import start_real_flux

                instance, found = start_real_flux(system, flux_site, console)
                stack.callback(instance.stop)  # before the system it runs in
            report = _run(system, console, jobs, quiet=as_json, sweep=not real)
            report.flux = found
            if as_json:
                print(json.dumps(report.as_json()))
            else:
                _print(console, report)
            if keep_running:
                _keep_running(system, console)
    except KeyboardInterrupt:
        console.print("interrupted: every process the demo started has been stopped")
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0 if report.ok else 1

"""The chaos harness: the whole simulated system runs a batch of the demo's jobs while
processes are killed, frozen and restarted at random, and reports what was lost.

Faults, drawn from a seeded random generator while jobs run:

* ``kill worker``, ``kill node-worker``, ``kill watcher``, ``kill beat`` — SIGKILL (no
  cleanup, nothing acknowledged), then the process starts again after a short while;
* ``kill worker between actions`` — the worker SIGKILLs itself at the next gap between
  two actions of a task (``coral2_sim.kill_points.KILL_FILE_VARIABLE``);
* ``kill bridge`` — the outbox delivery dies at its next Flux request, just before
  or just after Flux takes it, and a new one starts
  (:class:`~coral2_sim.flux.delivery.DeliveryThread`);
* ``freeze beat`` — SIGSTOP for a few seconds, then SIGCONT;
* ``restart redis``, ``crash redis`` — Redis stops (or is SIGKILLed: the kernel keeps
  every write it was handed) and starts again on its port;
* ``crash redis host`` — Redis's host crashes: SIGKILLed, its append-only file cut back
  to its size a second before (``appendfsync everysec``: the writes the host had not
  synced are lost), and started again; applied only when writes were lost;
* ``restart kube-api`` — the API server goes down for 1 to 5 s and comes back over the
  same objects with every connection cut and its watch cache afresh (a watch resumed
  from before gets 410), as one restarted over its etcd;
* ``step clock forward``, ``step clock back`` — the wall clock of every pipeline
  process steps an hour (:mod:`coral2_sim.clock`), as NTP or an operator steps a
  host's clock; Redis and the API server keep the true time;

and, all along, from the same seed:

* API faults — a share of the pipeline's requests to the API server answered 500,
  503, 409 (a PATCH or PUT) or 410 (a watch), or their watch stream broken;
* Workflow faults — a share of the Workflows struck in one state by a
  TransientCondition that clears, or by an Error that stays (the job fails);
* slow mounts — the ClientMounts of a share of the Workflows take longer than
  ``rabbit.prerun_timeout`` (the job fails, its computes are drained; the harness
  undrains them, as an operator would).

A job struck by a Workflow fault or a slow mount may end either way; every other job
must end as its kind says.

Every process runs as production runs it: signing on, a Redis user per role. When the
batch is in and the faults are over, every job must end as its kind says, within the
drain time, and nothing may be left (the demo's leak check: Workflows, Servers,
Computes, ClientMounts, locks, deadlines, ledger entries, outbox backlog, allocated
nodes, VNIs and CXI services).

``make chaos`` (1,000 jobs) or ``python -m coral2_sim.chaos --jobs N --seed S``.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from coral2_sim.chaos_faults import CLASSES, Faults, kill_file, needs_clock
from coral2_sim.clock import SteppingClock
from coral2_sim.demo.batch import BROKEN_COPIES, BUSY_UID, MIX, DemoJob
from coral2_sim.demo.lifecycle import outcome_problem
from coral2_sim.demo.metrics import leaks
from coral2_sim.demo.model import sample_path
from coral2_sim.dws.nnf_context import WorkflowFaults
from coral2_sim.kill_points import KILL_FILE_VARIABLE
from coral2_sim.node.agent import SlowMounts
from coral2_sim.system import SimulatedSystem
from pipeline.errors import FluxError
from pipeline.model.rabbitmap import RabbitMapping

#: the share of API requests answered with a fault while faults last
API_FAULT_RATE = 0.02
#: the share of Workflows struck by a TransientCondition or an Error
WORKFLOW_FAULT_RATE = 0.05
#: the share of Workflows whose mounts are slow, and how slow (s): past PRERUN_TIMEOUT_S
SLOW_MOUNTS = (0.05, 75.0)
#: a healthy job whose PreRun the worker was killed in three times (each costs up to
#: RESEND_AFTER_S, the ledger's resend) still mounts within it
PRERUN_TIMEOUT_S = 60.0
#: how long a sent task may go without an outcome before the ledger sends it again (s),
#: and the longest wait between two sends: a message lost to one kill after another is
#: sent again within a minute, however often the worker died
RESEND_AFTER_S = 15.0
RESEND_CAP_S = 60.0
#: at most this many jobs in flight at once (the sample cluster has 64 computes)
IN_FLIGHT = 24
#: how long each job's tasks run (s)
RUNTIME_S = 1.0
#: jobs of this many nodes or more get hardware collectives (the fabric manager on)
HWCOLL_MIN_NODES = 2


@dataclass
class ChaosReport:
    """What a run did and what it lost."""

    jobs: int = 0
    faults: Counter[str] = field(default_factory=Counter)  # applied, their effect seen
    skipped: Counter[str] = field(default_factory=Counter)  # tried, no effect seen
    applied: int = 0  # the process and Redis faults applied
    timeline: list[str] = field(default_factory=list)  # each fault, when (s from start)
    lost: list[str] = field(default_factory=list)  # never INACTIVE
    wrong: list[str] = field(default_factory=list)  # INACTIVE, but not as its kind says
    duplicates: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    seconds: float = 0.0
    workdir: str = ""  # the processes' logs

    @property
    def kills(self) -> int:
        return sum(n for kind, n in self.faults.items() if kind.startswith("kill"))

    @property
    def ok(self) -> bool:
        return not (self.lost or self.wrong or self.duplicates or self.leaks)

    def line(self) -> str:
        """The one-line summary: the outcome, then each fault kind, applied (its effect
        seen) and skipped (tried, no effect seen)."""
        kinds = sorted(set(self.faults) | set(self.skipped))
        by_kind = "; ".join(
            f"{kind} {self.faults[kind]}"
            + (f" (+{self.skipped[kind]} skipped)" if self.skipped[kind] else "")
            for kind in kinds
        )
        return (
            f"chaos: {self.jobs} jobs, {self.kills} kills, {len(self.lost)} lost, "
            f"{len(self.wrong)} stuck, {len(self.duplicates)} duplicate, "
            f"{len(self.leaks)} leaked" + (f" | faults: {by_kind}" if by_kind else "")
        )


API_FAULTS = {"0": "broken watch", "409": "409", "410": "410", "500": "500", "503": "503"}


@dataclass(frozen=True)
class Struck:
    """Which jobs the simulators strike (their draws depend on the seed and the name only)."""

    workflows: WorkflowFaults
    mounts: SlowMounts

    def of(self, jobid: int) -> str | None:
        """The fault that strikes ``jobid``'s Workflow, named, or None."""
        name = f"fluxjob-{jobid}"
        fault = self.workflows.fault_for(name)
        if fault is not None:
            status = "Error" if fault.severity == "Fatal" else "TransientCondition"
            return f"Workflow {status} in {fault.state}"
        return "slow mounts" if self.mounts.slow(name) else None


class Operator:
    """Undrains, every second, the nodes the pipeline drained (a slow mount's computes),
    as ``flux resource undrain`` would; counts them."""

    def __init__(self, system: SimulatedSystem) -> None:
        self.system = system
        self.undrained: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="operator", daemon=True)

    def start(self) -> Operator:
        self._thread.start()
        return self

    def stop(self) -> Counter[str]:
        self._stop.set()
        self._thread.join()
        return self.undrained

    def _run(self) -> None:
        flux = self.system.flux
        assert flux is not None
        while not self._stop.wait(1.0):
            with flux.lock:
                drained = dict(flux.resources.drained)
            for host, reason in drained.items():
                try:
                    flux.rpc("resource.undrain", {"targets": host})
                except FluxError:  # undrained meanwhile ("rank N not drained"): done
                    continue
                self.undrained[f"node undrained ({reason[:40]})"] += 1


def duplicates(system: SimulatedSystem) -> list[str]:
    """Flux messages delivered twice with the same payload (each must go once): every
    job message kind — RPCs, events, exceptions, memos and KVS puts (a put of the same
    value again is reported apart, as ``kvs.put``)."""
    assert system.flux is not None
    with system.flux.lock:
        seen = Counter(
            (topic, repr(sorted(payload.items())))
            for topic, payload in [*system.flux.received, *system.flux.puts]
            if "id" in payload  # a job's message; drains and properties may repeat
        )
    return [f"{topic} {payload} delivered {n}×" for (topic, payload), n in seen.items() if n > 1]


def _kinds() -> list[DemoJob]:
    # the busy-NIC job needs an operator's sweep (the demo does it); the rest end alone
    return [j for j in MIX if j.userid != BUSY_UID]


def run_chaos(
    jobs: int,
    *,
    seed: int = 1,
    every_s: float = 3.0,
    drain_s: float = 300.0,
    loglevel: str = "WARNING",
    api_fault_rate: float = API_FAULT_RATE,
    workflow_fault_rate: float = WORKFLOW_FAULT_RATE,
    slow_mounts: tuple[float, float] = SLOW_MOUNTS,
    min_faults: int = 0,
    faults: str = "mixed",
) -> ChaosReport:
    """Run ``jobs`` jobs under the faults of class ``faults`` (:data:`CLASSES`); return the
    report. ``min_faults``: the batch is paced so that at least that many faults strike
    it, however fast the machine runs it (job i is submitted once ``min_faults * i /
    jobs`` are done)."""
    if faults not in CLASSES:
        raise ValueError(f"unknown fault class {faults!r}; the classes are {', '.join(CLASSES)}")
    rng = random.Random(seed)
    mapping = RabbitMapping.load(sample_path("sample-rabbitmapping.json"))
    kinds = _kinds()
    batch = [kinds[i % len(kinds)] for i in range(jobs)]
    rng.shuffle(batch)
    report = ChaosReport(jobs=jobs)
    started = time.monotonic()
    clock = None
    if needs_clock(CLASSES[faults]):
        clock = SteppingClock(kill_file(seed).with_name(kill_file(seed).name + "-clock"))
    with SimulatedSystem(
        mapping,
        observe_only=False,
        with_flux=True,
        node_workers=True,
        slingshot=True,
        signing=True,
        acl=True,
        config=str(sample_path("sample-cluster.toml")),
        latency_s=0.001,
        # a mount slowed by kills and a busy machine is not a fault the run expects
        mount_timeout_s=600.0,
        loglevel=loglevel,
        api_fault_rate=api_fault_rate,
        workflow_fault_rate=workflow_fault_rate,
        slow_mounts=slow_mounts,
        fault_seed=seed,
        hwcoll_min_nodes=HWCOLL_MIN_NODES,  # the fabric manager on, as production runs it
        failed_copies=(BROKEN_COPIES,),  # the batch's failed copy fails here too
        process_env={"worker": {KILL_FILE_VARIABLE: str(kill_file(seed))}},
        clock_env={} if clock is None else clock.env(),
        extra_env={
            "CORAL2_PIPELINE_RABBIT__PRERUN_TIMEOUT": str(PRERUN_TIMEOUT_S),
            # a message a kill lost is sent again well within the leak check's settle time
            "CORAL2_PIPELINE_PIPELINE__RESEND_AFTER": str(RESEND_AFTER_S),
            "CORAL2_PIPELINE_PIPELINE__RESEND_CAP": str(RESEND_CAP_S),
        },
    ) as system:
        assert system.flux is not None
        flux = system.flux
        ids: list[tuple[DemoJob, int]] = []
        struck = Struck(WorkflowFaults(workflow_fault_rate, seed), SlowMounts(*slow_mounts, seed))
        operator = Operator(system).start()
        injector = Faults(system, rng, every_s, CLASSES[faults], clock).start()
        t0 = time.time()
        try:
            for index, job in enumerate(batch):
                while _active(system, ids) >= IN_FLIGHT or injector.applied() < (
                    min_faults * index // max(jobs, 1)
                ):
                    time.sleep(0.05)
                jobid = flux.submit(
                    job.resources(), system=job.system(), userid=job.userid, runtime_s=RUNTIME_S
                )
                ids.append((job, jobid))
                if job.cancel:
                    threading.Timer(0.5, _cancel, args=(system, jobid)).start()
            # faults go on while the batch drains, then stop: the last jobs end without them
            end = time.monotonic() + drain_s
            while _active(system, ids) and time.monotonic() < end - 60:
                time.sleep(0.2)
        finally:
            report.faults = injector.finish()
            report.skipped = injector.skipped
            report.applied = injector.applied()
            report.timeline = injector.timeline
            drawn = system.end_api_faults()
            report.faults.update({f"api {API_FAULTS[code]}": n for code, n in drawn.items()})
        flux.wait_inactive([j for _, j in ids], drain_s)
        for job, jobid in ids:
            flux_job = flux.job(jobid)
            if flux_job.state != "INACTIVE":
                events = ", ".join(e.name for e in flux_job.eventlog[-4:])
                report.lost.append(
                    f"{job.kind} job {jobid} still {flux_job.state} ({events}); "
                    f"submitted at {flux_job.eventlog[0].timestamp - t0:.1f} s; "
                    + diagnosis(system, jobid)
                )
            elif job.dw and (fault := struck.of(jobid)):
                report.faults[fault] += 1  # it may end either way
            elif (problem := outcome_problem(job, flux_job)) is not None:
                report.wrong.append(f"{problem}; {diagnosis(system, jobid)}")
        report.duplicates = duplicates(system)
        settle = time.monotonic() + SETTLE_S
        while (left := leaks(system)) and time.monotonic() < settle + _resend_wait(system):
            time.sleep(0.5)
        report.leaks = left + [f"process {p} died" for p in system.alive()]
        assert system.redis is not None
        if refused := system.redis.aof_refusals():
            report.leaks.append(
                f"Redis dropped {len(refused)} commands of its append-only file as it "
                f"restarted (writes lost), e.g. {refused[0]!r}"
            )
        injector.close()
        report.faults.update(operator.stop())
        for name in system.alive():
            if name in system.procs.running:
                code = system.procs.get(name).returncode
                report.leaks.append(f"{name} exited {code}; see {system.workdir / name}.log")
        report.workdir = str(system.workdir)
    report.seconds = time.monotonic() - started
    return report


#: How long the leak check waits for the last work to settle once every job ended (s)...
SETTLE_S = 60.0
#: ... and, beyond that, at most this long for the next resend of a sent task still
#: without an outcome: the ledger's waits double with a message's age, so a message a
#: kill lost late in the run is sent again after its age, not at once.
RESEND_WAIT_CAP_S = 600.0


def _resend_wait(system: SimulatedSystem) -> float:
    """How much longer than :data:`SETTLE_S` to wait: until the latest resend the ledger
    has scheduled has come and gone (30 s to run it), at most RESEND_WAIT_CAP_S."""
    assert system.store is not None
    store = system.store
    latest: Any = store.client.zrange(store.keys.ledger_due, -1, -1, withscores=True)
    if not latest:
        return 0.0
    return min(max(float(latest[0][1]) + 30.0 - time.time(), 0.0), RESEND_WAIT_CAP_S)


def diagnosis(system: SimulatedSystem, jobid: int) -> str:
    """Where a lost job stands in the pipeline: its record and its Workflow."""
    assert system.store is not None and system.dws is not None
    record = system.store.jobs.get(jobid)
    where = (
        "no record"
        if record is None
        else (
            f"record {record.state}, teardown {record.teardown.value}, epilog "
            f"{record.epilog.value}, deadlines {sorted(record.deadlines)}, node work "
            f"{record.node_work and (record.node_work.released, record.node_work.mounted)}"
        )
    )
    pending = [
        f"{e.name} (first sent {time.time() - e.first_sent:.0f} s ago)"
        for e in system.store.ledger.unsettled(10_000)
        if e.kwargs.get("jobid") == jobid
    ]
    raws: list[bytes] = system.store.client.hvals(system.store.keys.failures)  # type: ignore[assignment]
    failures = [raw.decode(errors="replace")[:200] for raw in raws if str(jobid).encode() in raw]
    where += f"; ledger {pending or 'clear'}; failures {failures or 'none'}"
    try:
        workflow = system.dws.get_workflow(f"fluxjob-{jobid}")
        status = workflow.get("status") or {}
        where += (
            f"; Workflow {workflow['spec'].get('desiredState')} → {status.get('state')} "
            f"ready={status.get('ready')} {status.get('status')} {status.get('message', '')!r}"
        )
    except Exception as exc:  # gone, or the API server unreachable: say so
        where += f"; Workflow: {exc}"
    return where


def _active(system: SimulatedSystem, ids: list[tuple[DemoJob, int]]) -> int:
    assert system.flux is not None
    with system.flux.lock:
        return sum(1 for _, j in ids if system.flux.jobs[j].state != "INACTIVE")


def _cancel(system: SimulatedSystem, jobid: int) -> None:
    assert system.flux is not None
    with contextlib.suppress(Exception):  # it ended already: nothing to cancel
        system.flux.cancel(jobid)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--every", type=float, default=3.0, help="seconds between faults")
    parser.add_argument("--drain", type=float, default=300.0, help="seconds to let jobs end")
    parser.add_argument(
        "--min-faults",
        type=int,
        default=0,
        help="pace the batch so that at least this many faults strike it (default 0)",
    )
    parser.add_argument(
        "--faults", default="mixed", choices=sorted(CLASSES), help="the fault class (default mixed)"
    )
    parser.add_argument(
        "--loglevel", default="WARNING", help="the worker's and beat's log level (INFO: every task)"
    )
    args = parser.parse_args(argv)
    report = run_chaos(
        args.jobs,
        seed=args.seed,
        every_s=args.every,
        drain_s=args.drain,
        loglevel=args.loglevel,
        faults=args.faults,
        min_faults=args.min_faults,
    )
    print(f"faults: {dict(sorted(report.faults.items()))}; {report.seconds:.0f} s")
    print(f"logs: {report.workdir}")
    if not report.ok:
        print("  timeline: " + "; ".join(report.timeline))
    for label, items in (
        ("lost", report.lost),
        ("stuck", report.wrong),
        ("duplicate", report.duplicates),
        ("leaked", report.leaks),
    ):
        for item in items[:20]:
            print(f"  {label}: {item}")
    print(report.line())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""``coral2-pipeline status``: where the pipeline stands, or one job, from the job store.

Read-only (``pipeline/store/report.py``): safe to run at any time, against
production Redis, in a loop. It flags what an admin should look at — an
event no observe read past ``dws.resync``'s grace, no watcher leading, a
backlog Flux is not taking, tasks that failed for good — and says what to
check next.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import time
from typing import Any

from pydantic import BaseModel
from rich.console import Console

from pipeline.cli import kinds
from pipeline.cli.common import settings_of
from pipeline.cli.status_flags import (
    CRITICAL,
    NAMES,
    UNKNOWN,
    WARNING,
    Flag,
    headline,
    job_flags,
    perfdata,
    pipeline_flags,
    verdict,
)
from pipeline.cli.tables import SafeTable, flag_line
from pipeline.errors import ConfigError, InputError, StoreUnavailable
from pipeline.model.hostlist import unique_hostlist
from pipeline.model.hwcoll import REDACTED, redact
from pipeline.model.job import JobRecord, NodeWork, Slingshot
from pipeline.model.jobid import decode_jobid, encode_f58
from pipeline.platform.nodework import expected_computes
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.store.connection import shown_url
from pipeline.store.report import JobView, PipelineView, job_view, pipeline_view


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "status",
        help="show where the pipeline, or one job, stands (read-only, from the job store)",
        description=(
            "Without -j: tracked jobs by state, the stalest ones, Workflow events no observe "
            "has read, the outbox to Flux, sent tasks without an outcome, deadlines, "
            "failures, locks, the watcher and rabbit health. With -j: everything the store "
            "holds about that job. Reads only, with the monitoring role's Redis user alone. "
            "A Nagios check: the first line is the verdict, and the exit status 0 OK, "
            "1 WARNING, 2 CRITICAL (Redis unreachable among them), 3 UNKNOWN."
        ),
    )
    parser.usage_exit = UNKNOWN  # a Nagios plugin's bad usage (guidelines)
    parser.add_argument("-j", "--jobid", metavar="ID", help="one job (decimal or F58)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--limit",
        type=kinds.count(least=1, most=100_000),
        default=10,
        metavar="N",
        help="rows per list (default 10)",
    )
    parser.add_argument(
        "-t",
        "--timeout",
        type=kinds.seconds(most=3600),
        default=30.0,
        metavar="S",
        help="give a verdict of UNKNOWN after S seconds, as Nagios plugins do (default 30)",
    )
    parser.set_defaults(func=run)


class _TimedOut(BaseException):
    """``-t`` passed (a BaseException: no library's ``except Exception`` takes it for its
    own error)."""


def _alarm(*_: object) -> None:
    raise _TimedOut


def _unknown_or_critical(status: int, text: str, as_json: bool) -> int:
    """A verdict no check made (Redis unreachable, settings that cannot work), on stdout
    where a Nagios plugin's output goes, as one line or one JSON object."""
    line = " ".join(text.split())
    if as_json:
        reason = {"status": NAMES[status], "flags": [line], "critical": []}
        if status == CRITICAL:
            reason["critical"] = [line]
        print(json.dumps(reason, sort_keys=True))
    else:
        print(f"{NAMES[status]}: {line}")
    return status


def run(args: argparse.Namespace) -> int:
    """Print the verdict and the report within ``-t``; return the verdict's Nagios status."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, args.timeout)
    try:
        return _report(args)
    except _TimedOut:
        why = f"no verdict in {args.timeout:g} s (-t): Redis or the report took longer"
        return _unknown_or_critical(UNKNOWN, why, args.json)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _report(args: argparse.Namespace) -> int:
    try:
        settings = settings_of(args)
    except ConfigError as exc:  # NRPE shows stdout alone: say it there, as UNKNOWN
        return _unknown_or_critical(UNKNOWN, f"configuration: {exc}", args.json)
    store = Store.from_url(settings.store_url, settings.pipeline.key_prefix)
    resend_after = settings.pipeline.resend_after
    try:
        if args.jobid is not None:
            try:
                jobid = decode_jobid(args.jobid)
            except InputError as exc:
                why = f"{exc} (give it in decimal or F58, e.g. ƒ2n6QhDjk)"
                return _unknown_or_critical(UNKNOWN, why, args.json)
            return _job(job_view(store, jobid), args.json, resend_after)
        view = pipeline_view(store, limit=args.limit)
        rabbit = settings.rabbit
        timeouts = {
            "Setup": rabbit.setup_timeout,
            "PreRun": rabbit.prerun_timeout,
            "PostRun": rabbit.postrun_timeout,
        }
        nodes, unknown = node_worker_hosts(settings, store)
        refusals = store.metrics.refusals_total()
        more: list[Flag] = []
        if unknown:  # a check that cannot run says so: never switched off silently
            more.append(Flag(UNKNOWN, f"cannot check the node workers: {unknown}"))
        if store.systemstatus.missing():
            why = (
                "DWS has no SystemStatus default (neither dws nor nnf-sos makes it): the "
                "computes the pipeline disables are drained in Flux but not marked in DWS; "
                "create it (docs/runbook.md) or leave it, as nnf does"
            )
            more.append(Flag(WARNING, why))
        return _pipeline(view, args.json, resend_after, nodes, timeouts, more, refusals)
    except StoreUnavailable as exc:  # down, or refusing this user: no check can be made
        where = shown_url(settings.store_url)
        return _unknown_or_critical(CRITICAL, f"Redis at {where}: {exc}", args.json)
    finally:
        store.close()


# --- one job -----------------------------------------------------------------------
def _job(view: JobView, as_json: bool, resend_after_s: float) -> int:
    if not view.known:
        print(
            f"UNKNOWN: no trace of job {view.jobid} in the job store: never seen by the "
            "pipeline, or forgotten pipeline.retention after its Workflow was deleted"
        )
        return UNKNOWN
    now = time.time()
    flags = job_flags(view, now, resend_after_s)
    if as_json:
        print(json.dumps(redact(_json({**_plain(view), **_verdict(flags)})), sort_keys=True))
        return verdict(flags)
    print(headline(flags))
    table = SafeTable(title=f"job {view.jobid} ({encode_f58(view.jobid)})", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    record = view.record
    if view.record_error:
        table.add_row("record", f"unreadable: {view.record_error}")
    elif record is None:
        table.add_row("record", "none")
    else:
        observed = (
            f"observed {_ago(now, record.observed_at)} (rv {record.observed_rv})"
            if record.observed_at
            else "not observed yet"
        )
        table.add_row("state", f"{record.state or '-'}, {observed}")
        table.add_row("workflow", record.workflow or "-")
        table.add_row("hosts", unique_hostlist(record.hosts) or "-")
        table.add_row("rabbits", unique_hostlist(record.rabbits) or "-")
        if record.failed_nodes:
            table.add_row("failed nodes", unique_hostlist(record.failed_nodes))
        table.add_row("teardown", f"{record.teardown}, epilog {record.epilog}")
        if record.slingshot is not None:
            table.add_row("slingshot", _slingshot(record.slingshot))
        if record.hwcoll is not None:
            kept = record.hwcoll
            table.add_row(
                "hwcoll",
                f"{kept.fm_job_id}: {kept.mcast_limit} addresses, step {kept.step}, token "
                f"{REDACTED}{', released' if kept.released else ''}",
            )
        if record.node_work is not None:
            ready = set(view.answered.get("prolog", []))
            stopped = set(view.answered.get("stopped", []))
            table.add_row("nodes", _node_work(record.node_work, ready, stopped))
        if record.tc_since:
            table.add_row(
                "TransientCondition", f"since {_ago(now, record.tc_since)}: {record.tc_message}"
            )
    table.add_row("tracked", "yes" if view.tracked else "no (its Workflow was seen gone)")
    if view.seen:
        table.add_row("latest event", f"rv {view.seen[0]}, {_ago(now, view.seen[1])}")
    table.add_row("observe queued", "yes" if view.observe_pending else "no")
    lock = (
        "free" if view.lock_ttl_ms is None else f"held, expires in {view.lock_ttl_ms / 1000:.1f} s"
    )
    table.add_row("lock", lock)
    table.add_row("sent once", ", ".join(view.marks) or "-")
    table.add_row(
        "deadlines", "; ".join(f"{d.kind} {_in(now, d.due)}" for d in view.deadlines) or "-"
    )
    table.add_row(
        "outbox",
        "; ".join(f"{d.message.kind} ({d.entry_id})" for d in view.outbox if d.message) or "-",
    )
    table.add_row(
        "sent tasks", "; ".join(f"{e.name} {_ago(now, e.first_sent)}" for e in view.ledger) or "-"
    )
    table.add_row(
        "failures", "; ".join(f"{f.get('task')}: {f.get('reason')}" for f in view.failures) or "-"
    )
    console = Console()
    console.print(table)
    _print_flags(console, flags)
    return verdict(flags)


# --- the whole pipeline --------------------------------------------------------------
def node_worker_hosts(settings: Settings, store: Store) -> tuple[list[str] | None, str]:
    """The computes that must run a node worker, as these settings say, else as the
    lifecycle workers noted them in the store; and why they cannot be told, when not."""
    computes, problem = expected_computes(settings)
    if computes is None and not problem:  # these settings give node workers no work
        computes = store.expected_node_workers.read()
    return computes, problem


def _pipeline(
    view: PipelineView,
    as_json: bool,
    resend_after_s: float,
    nodes: list[str] | None,
    timeouts: dict[str, float],
    more: list[Flag] | None = None,
    refusals: dict[str, int] | None = None,
) -> int:
    flags = pipeline_flags(view, resend_after_s, nodes, timeouts) + (more or [])
    refused = refusals or {}
    if as_json:
        whole = {**_plain(view), **_verdict(flags), "flux_refusals": refused}
        print(json.dumps(redact(_json(whole)), sort_keys=True))
        return verdict(flags)
    print(f"{headline(flags)} | {perfdata(view, nodes)}")
    now = view.at
    summary = SafeTable(title="coral2-pipeline", show_header=False)
    summary.add_column(style="bold")
    summary.add_column()
    states = ", ".join(f"{s} {n}" for s, n in sorted(view.states.items()))
    summary.add_row("tracked jobs", f"{view.tracked}" + (f" ({states})" if states else ""))
    oldest = f", oldest {_ago(now, view.outbox_oldest_at)}" if view.outbox_oldest_at else ""
    summary.add_row(
        "outbox to Flux",
        f"{view.outbox_backlog} entries, {view.outbox_unacked} taken and not acknowledged{oldest}",
    )
    oldest = f", oldest {_ago(now, view.answers_oldest_at)}" if view.answers_oldest_at else ""
    summary.add_row("node answers", f"{view.answers_waiting} not yet counted{oldest}")
    summary.add_row("sent tasks", f"{view.ledger_pending} without an outcome")
    due = view.next_deadline
    summary.add_row(
        "deadlines",
        f"{view.deadlines} armed"
        + (f", next: {due.kind} of job {due.jobid} {_in(now, due.due)}" if due else ""),
    )
    summary.add_row("failures", f"{view.failures} task(s) failed for good")
    told = ", ".join(f"{kind} {n}" for kind, n in sorted(refused.items()))
    summary.add_row("Flux refused (ever)", told or "nothing")
    summary.add_row("locks held", str(view.locks_held))
    if nodes and view.node_workers is not None:
        connected = sum(1 for n in nodes if n in view.node_workers)
        summary.add_row("node workers", f"{connected} of {len(nodes)} connected")
    resume = ", ".join(f"{p} at rv {rv}" for p, rv in sorted(view.watch_resume.items()))
    summary.add_row(
        "watcher",
        f"{view.watcher_leader or 'no leader'}" + (f"; resumes {resume}" if resume else ""),
    )
    sick = {
        n: h for n, h in view.rabbits.items() if h.get("status") != "Ready" or h.get("not_ready")
    }
    summary.add_row("rabbits", f"{len(view.rabbits)} seen, {len(sick)} not Ready")
    tick = view.beat_tick
    summary.add_row("beat", f"{tick[1]}, ticked {_ago(now, tick[0])}" if tick else "never ticked")
    summary.add_row(
        "queues served",
        ", ".join(f"{q} {_ago(now, at)}" for q, at in sorted(view.alive.items())) or "-",
    )
    summary.add_row(
        "dead letters", f"{view.dead_letters} kept, {view.dead_letters_total} ever set aside"
    )
    if view.memory is not None:
        used, limit = view.memory
        shown = f"{limit / 2**20:.0f} MiB" if limit else "no limit"
        summary.add_row("redis memory", f"{used / 2**20:.0f} MiB used of {shown}")
    console = Console()
    console.print(summary)
    _rows(
        console,
        "stalest jobs (last observe)",
        ("job", "state", "observed"),
        [(str(j), s or "-", _ago(now, at) if at else "never") for j, s, at in view.stalest],
    )
    _rows(
        console,
        "Workflow events no observe has read",
        ("job", "rv", "seen"),
        [(str(j), rv, _ago(now, at)) for j, rv, at in view.unobserved],
    )
    _rows(
        console,
        "sent tasks without an outcome, oldest first",
        ("task", "arguments", "first sent"),
        [(e.name, json.dumps(e.kwargs), _ago(now, e.first_sent)) for e in view.ledger_oldest],
    )
    _rows(
        console,
        "latest failures",
        ("task", "job", "reason"),
        [
            (str(f.get("task")), str(f.get("jobid")), str(f.get("reason")))
            for f in view.recent_failures
        ],
    )
    _rows(
        console,
        "rabbits not Ready",
        ("rabbit", "status", "state", "computes not Ready"),
        [
            (n, str(h.get("status")), str(h.get("state")), ",".join(h.get("not_ready") or []))
            for n, h in sorted(sick.items())
        ],
    )
    _print_flags(console, flags)
    return verdict(flags)


# --- helpers ------------------------------------------------------------------------------
def _rows(
    console: Console, title: str, columns: tuple[str, ...], rows: list[tuple[str, ...]]
) -> None:
    if not rows:
        return
    table = SafeTable(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    console.print(table)


def _verdict(flags: list[Flag]) -> dict[str, Any]:
    """The verdict and the flags, for ``--json``."""
    return {
        "status": NAMES[verdict(flags)],
        "flags": [f.text for f in flags],
        "critical": [f.text for f in flags if f.severity == CRITICAL],
    }


def _print_flags(console: Console, flags: list[Flag]) -> None:
    for flag in flags:
        console.print(flag_line(f"{NAMES[flag.severity]}: {flag.text}"), highlight=False)
    if not flags:
        console.print("nothing to look at", highlight=False)


def _ago(now: float, at: float) -> str:
    return f"{max(now - at, 0.0):.1f} s ago"


def _in(now: float, at: float) -> str:
    delta = at - now
    return f"in {delta:.1f} s" if delta >= 0 else f"{-delta:.1f} s overdue"


def _json(value: Any) -> Any:
    """``value`` as plain JSON data (the report's dataclasses and models turned to dicts)."""
    return json.loads(json.dumps(value, default=_plain))


def _plain(value: Any) -> Any:
    """JSON form of the report's dataclasses and models (``json.dumps`` default)."""
    if isinstance(value, BaseModel):
        data = value.model_dump(mode="json")
        if isinstance(value, JobRecord) and value.hwcoll is not None:
            data["hwcoll"] = value.hwcoll.redacted()  # the session token is a secret
        return data
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _node_work(work: NodeWork, ready: set[str], stopped: set[str]) -> str:
    """How far the job's node prologs are (``ready``, ``stopped``: the nodes that
    answered each phase)."""
    if work.failed:
        return f"failed: {work.failed}"
    parts = [f"prolog done on {len(ready)}/{len(work.nodes)} nodes"]
    if work.dw:
        mounted = "mounted" if work.mounted else "not mounted yet"
        parts.append(f"{mounted}, clientmount stopped on {len(stopped)}/{len(work.nodes)}")
    waiting = unique_hostlist(work.waiting(ready, stopped)) or "PreRun"
    parts.append("released" if work.released else f"held, waiting for {waiting}")
    return "; ".join(parts)


def _slingshot(state: Slingshot) -> str:
    """The job's VNIs and how far its nodes' CXI services are."""
    vnis = ",".join(map(str, state.vnis)) or f"none ({state.reason})"
    parts = [f"VNIs {vnis}"]
    if state.released:
        parts.append(f"released, gone from {len(state.clean)}/{len(state.nodes)} nodes")
    if state.drained:
        parts.append(f"drained for busy services: {unique_hostlist(state.drained)}")
    return "; ".join(parts)

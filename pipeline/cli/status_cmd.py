"""``coral2-pipeline status``: where the pipeline stands, or one job, from the job store.

Read-only (``pipeline/store/report.py``): safe to run at any time, against
production Redis, in a loop. It flags what an admin should look at — an
event no observe read past ``dws.resync``'s grace, no watcher leading, a
backlog Flux is not taking, tasks that failed for good — and says what to
check next.
"""

from __future__ import annotations

import argparse
import json
import signal
from typing import Any

from pipeline.cli import kinds
from pipeline.cli.common import settings_of
from pipeline.cli.status_flags import (
    CRITICAL,
    NAMES,
    UNKNOWN,
    WARNING,
    Flag,
    headline,
    perfdata,
    pipeline_flags,
    verdict,
)
from pipeline.cli.status_job import job_report
from pipeline.cli.status_render import (
    ago,
    plain,
    plain_json,
    print_flags,
    rows,
    until,
    verdict_json,
)
from pipeline.cli.tables import SafeTable, report_console
from pipeline.errors import ConfigError, InputError, StoreUnavailable
from pipeline.model.hwcoll import redact
from pipeline.model.jobid import decode_jobid
from pipeline.platform.nodework import expected_computes
from pipeline.settings import Settings
from pipeline.store import Store
from pipeline.store.connection import shown_url
from pipeline.store.report import PipelineView, job_view, pipeline_view


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
            return job_report(job_view(store, jobid), args.json, resend_after)
        nodes, unknown = node_worker_hosts(settings, store)
        prefix = settings.pipeline.queues.node_prefix
        view = pipeline_view(store, limit=args.limit, nodes=nodes, node_queue_prefix=prefix)
        rabbit = settings.rabbit
        timeouts = {
            "Setup": rabbit.setup_timeout,
            "PreRun": rabbit.prerun_timeout,
            "PostRun": rabbit.postrun_timeout,
        }
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
        whole = {**plain(view), **verdict_json(flags), "flux_refusals": refused}
        print(json.dumps(redact(plain_json(whole)), sort_keys=True))
        return verdict(flags)
    print(f"{headline(flags)} | {perfdata(view, nodes)}")
    now = view.at
    summary = SafeTable(title="coral2-pipeline", show_header=False)
    summary.add_column(style="bold")
    summary.add_column()
    states = ", ".join(f"{s} {n}" for s, n in sorted(view.states.items()))
    summary.add_row("tracked jobs", f"{view.tracked}" + (f" ({states})" if states else ""))
    oldest = f", oldest {ago(now, view.outbox_oldest_at)}" if view.outbox_oldest_at else ""
    summary.add_row(
        "outbox to Flux",
        f"{view.outbox_backlog} entries, {view.outbox_unacked} taken and not acknowledged{oldest}",
    )
    oldest = f", oldest {ago(now, view.answers_oldest_at)}" if view.answers_oldest_at else ""
    summary.add_row("node answers", f"{view.answers_waiting} not yet counted{oldest}")
    summary.add_row("sent tasks", f"{view.ledger_pending} without an outcome")
    due = view.next_deadline
    summary.add_row(
        "deadlines",
        f"{view.deadlines} armed"
        + (f", next: {due.kind} of job {due.jobid} {until(now, due.due)}" if due else ""),
    )
    summary.add_row("failures", f"{view.failures} task(s) failed for good")
    told = ", ".join(f"{kind} {n}" for kind, n in sorted(refused.items()))
    summary.add_row("Flux refused (ever)", told or "nothing")
    summary.add_row("locks held", str(view.locks_held))
    if nodes and view.node_workers is not None:
        census = view.node_workers
        summary.add_row("node workers", f"{census.alive} of {census.expected} alive")
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
    summary.add_row("beat", f"{tick[1]}, ticked {ago(now, tick[0])}" if tick else "never ticked")
    summary.add_row(
        "queues served",
        ", ".join(f"{q} {ago(now, at)}" for q, at in sorted(view.alive.items())) or "-",
    )
    summary.add_row(
        "dead letters", f"{view.dead_letters} kept, {view.dead_letters_total} ever set aside"
    )
    if view.memory is not None:
        used, limit = view.memory
        shown = f"{limit / 2**20:.0f} MiB" if limit else "no limit"
        summary.add_row("redis memory", f"{used / 2**20:.0f} MiB used of {shown}")
    console = report_console()
    console.print(summary)
    rows(
        console,
        "stalest jobs (last observe)",
        ("job", "state", "observed"),
        [(str(j), s or "-", ago(now, at) if at else "never") for j, s, at in view.stalest],
    )
    rows(
        console,
        "Workflow events no observe has read",
        ("job", "rv", "seen"),
        [(str(j), rv, ago(now, at)) for j, rv, at in view.unobserved],
    )
    rows(
        console,
        "sent tasks without an outcome, oldest first",
        ("task", "arguments", "first sent"),
        [(e.name, json.dumps(e.kwargs), ago(now, e.first_sent)) for e in view.ledger_oldest],
    )
    rows(
        console,
        "latest failures",
        ("task", "job", "reason"),
        [
            (str(f.get("task")), str(f.get("jobid")), str(f.get("reason")))
            for f in view.recent_failures
        ],
    )
    rows(
        console,
        "rabbits not Ready",
        ("rabbit", "status", "state", "computes not Ready"),
        [
            (n, str(h.get("status")), str(h.get("state")), ",".join(h.get("not_ready") or []))
            for n, h in sorted(sick.items())
        ],
    )
    print_flags(console, flags)
    return verdict(flags)

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
import time
from typing import Any

from pydantic import BaseModel
from rich.console import Console

from pipeline.cli.common import CommandError, SafeTable, flag_line, settings_of
from pipeline.errors import InputError
from pipeline.model.hostlist import unique_hostlist
from pipeline.model.hwcoll import REDACTED, redact
from pipeline.model.job import JobRecord, NodeWork, Slingshot
from pipeline.model.jobid import decode_jobid, encode_f58
from pipeline.store import Store
from pipeline.store.report import JobView, PipelineView, job_view, pipeline_view
from pipeline.tasks.observe import RESYNC_AFTER_S


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "status",
        help="show where the pipeline, or one job, stands (read-only, from the job store)",
        description=(
            "Without -j: tracked jobs by state, the stalest ones, Workflow events no observe "
            "has read, the outbox to Flux, sent tasks without an outcome, deadlines, "
            "failures, locks, the watcher and rabbit health. With -j: everything the store "
            "holds about that job. Reads only; exits 1 when something needs a look."
        ),
    )
    parser.add_argument("-j", "--jobid", metavar="ID", help="one job (decimal or F58)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--limit", type=int, default=10, metavar="N", help="rows per list (default 10)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the report; return 1 when it flags something (or the job is unknown)."""
    if args.limit < 1:
        raise CommandError(f"--limit must be at least 1, got {args.limit}")
    settings = settings_of(args)
    store = Store.from_url(settings.store_url, settings.pipeline.key_prefix)
    resend_after = settings.pipeline.resend_after
    try:
        if args.jobid is not None:
            try:
                jobid = decode_jobid(args.jobid)
            except InputError as exc:
                raise CommandError(f"{exc} (give it in decimal or F58, e.g. ƒ2n6QhDjk)") from None
            return _job(job_view(store, jobid), args.json, resend_after)
        return _pipeline(pipeline_view(store, limit=args.limit), args.json, resend_after)
    finally:
        store.close()


# --- one job -----------------------------------------------------------------------
def _job(view: JobView, as_json: bool, resend_after_s: float) -> int:
    if not view.known:
        raise CommandError(
            f"no trace of job {view.jobid} in the job store: never seen by the pipeline, "
            "or forgotten pipeline.retention after its Workflow was deleted"
        )
    now = time.time()
    flags = _job_flags(view, now, resend_after_s)
    if as_json:
        print(json.dumps(redact(_json({**_plain(view), "flags": flags})), sort_keys=True))
        return 1 if flags else 0
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
    return 1 if flags else 0


def _job_flags(view: JobView, now: float, resend_after_s: float) -> list[str]:
    flags: list[str] = []
    if view.record_error:
        flags.append(f"its record cannot be read ({view.record_error}): a task of it will fail")
    record = view.record
    read_rv = record.observed_rv if record else ""
    if view.seen and view.seen[0] != read_rv and now - view.seen[1] > RESYNC_AFTER_S:
        flags.append(
            f"its latest Workflow event (rv {view.seen[0]}) went unobserved for "
            f"{now - view.seen[1]:.0f} s: are a worker and beat (dws.resync) running?"
        )
    if view.failures:
        flags.append(f"{len(view.failures)} of its tasks failed for good (see failures)")
    overdue = [e.name for e in view.ledger if now - e.first_sent > resend_after_s]
    if overdue:
        flags.append(_overdue(overdue, resend_after_s))
    if not view.searched_all:
        flags.append("the outbox, ledger or failures list is longer than the search limit")
    return flags


# --- the whole pipeline --------------------------------------------------------------
def _pipeline(view: PipelineView, as_json: bool, resend_after_s: float) -> int:
    flags = _pipeline_flags(view, resend_after_s)
    if as_json:
        print(json.dumps(redact(_json({**_plain(view), "flags": flags})), sort_keys=True))
        return 1 if flags else 0
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
    summary.add_row("sent tasks", f"{view.ledger_pending} without an outcome")
    due = view.next_deadline
    summary.add_row(
        "deadlines",
        f"{view.deadlines} armed"
        + (f", next: {due.kind} of job {due.jobid} {_in(now, due.due)}" if due else ""),
    )
    summary.add_row("failures", f"{view.failures} task(s) failed for good")
    summary.add_row("locks held", str(view.locks_held))
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
    return 1 if flags else 0


#: A beat tick older than this is flagged (the leader ticks at least every lease/3).
BEAT_LATE_S = 30.0
#: A queue whose latest heartbeat (sent every 10 s) is older than this is flagged.
QUEUE_LATE_S = 60.0


#: The share of Redis's maxmemory past which ``status`` flags it.
MEMORY_HIGH = 0.8


def _memory_flags(memory: tuple[int, int] | None) -> list[str]:
    if memory is None:
        return []
    used, limit = memory
    if limit == 0:
        return [
            "Redis has no maxmemory: a flood can exhaust its host; set maxmemory and "
            "maxmemory-policy noeviction (deploy/redis/coral2-pipeline.conf)"
        ]
    if used > MEMORY_HIGH * limit:
        return [
            f"Redis uses {used / 2**20:.0f} MiB of its {limit / 2**20:.0f} MiB maxmemory: "
            "past it every write is refused; see docs/operations.md (Redis memory) for the "
            "biggest keys and how to shut out a flooding node's user"
        ]
    return []


def _pipeline_flags(view: PipelineView, resend_after_s: float) -> list[str]:
    now = view.at
    flags: list[str] = []
    if view.watcher_leader is None:
        flags.append("no watcher leads: start `coral2-pipeline watch` (no event reaches a task)")
    lost = [j for j, _, at in view.unobserved if now - at > RESYNC_AFTER_S]
    if lost:
        flags.append(
            f"{len(lost)} job(s) have a Workflow event unobserved for over {RESYNC_AFTER_S:.0f} s "
            f"(e.g. {lost[0]}): are a worker and beat (dws.resync) running?"
        )
    if view.outbox_oldest_at and now - view.outbox_oldest_at > 60:
        flags.append(
            f"the outbox's oldest entry is {now - view.outbox_oldest_at:.0f} s old: "
            "is `coral2-pipeline flux-bridge` running and Flux answering?"
        )
    overdue = [e.name for e in view.ledger_oldest if now - e.first_sent > resend_after_s]
    if overdue:
        flags.append(_overdue(overdue, resend_after_s))
    if view.failures:
        flags.append(
            f"{view.failures} task(s) failed for good: `coral2-pipeline status -j JOBID` for one"
        )
    tick = view.beat_tick
    if tick is None or now - tick[0] > BEAT_LATE_S:
        since = f"for {now - tick[0]:.0f} s (last: {tick[1]})" if tick else "ever"
        flags.append(
            f"beat has not ticked {since}: is `celery -A pipeline.app beat` running, and not "
            "stopped? Deadlines, resync, redelivery and these checks wait for it"
        )
    else:
        for queue, at in sorted(view.alive.items()):
            if now - at > QUEUE_LATE_S:
                flags.append(
                    f"no worker has taken work from queue {queue} for {now - at:.0f} s: "
                    f"start one (`celery -A pipeline.app worker -Q {queue}`) or see why "
                    "every worker is stuck"
                )
    flags += _memory_flags(view.memory)
    if view.latest_dead_letters:
        latest = view.latest_dead_letters[0]
        flags.append(
            f"{view.dead_letters} message(s) set aside as dead letters (latest from "
            f"{latest.where} {_ago(now, latest.at)}: {latest.reason}): read them with "
            "`coral2-pipeline deadletters`, then `coral2-pipeline deadletters --clear`"
        )
    return flags


# --- helpers ------------------------------------------------------------------------------
def _overdue(names: list[str], resend_after_s: float) -> str:
    tasks = ", ".join(sorted(set(names)))
    return (
        f"sent tasks ({tasks}) have had no outcome for over {resend_after_s:.0f} s "
        "(pipeline.resend_after), so they are being sent again: are the workers of every "
        "queue running (`celery -A pipeline.app inspect active_queues`; node tasks need "
        "their node's node-worker)? A node prolog waiting for its mounts may run that long."
    )


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


def _print_flags(console: Console, flags: list[str]) -> None:
    for flag in flags:
        console.print(flag_line(flag), highlight=False)
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

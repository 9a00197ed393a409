"""``coral2-pipeline status --jobid``: one job's report, from the job store."""

from __future__ import annotations

import json
import time

from pipeline.cli.status_flags import UNKNOWN, headline, job_flags, verdict
from pipeline.cli.status_render import ago, plain, plain_json, print_flags, until, verdict_json
from pipeline.cli.tables import SafeTable, report_console
from pipeline.model.hostlist import unique_hostlist
from pipeline.model.hwcoll import REDACTED, redact
from pipeline.model.job import NodeWork, Slingshot
from pipeline.model.jobid import encode_f58
from pipeline.store.report import JobView


def job_report(view: JobView, as_json: bool, resend_after_s: float) -> int:
    if not view.known:
        print(
            f"UNKNOWN: no trace of job {view.jobid} in the job store: never seen by the "
            "pipeline, or forgotten pipeline.retention after its Workflow was deleted"
        )
        return UNKNOWN
    now = time.time()
    flags = job_flags(view, now, resend_after_s)
    if as_json:
        print(
            json.dumps(redact(plain_json({**plain(view), **verdict_json(flags)})), sort_keys=True)
        )
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
            f"observed {ago(now, record.observed_at)} (rv {record.observed_rv})"
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
                "TransientCondition", f"since {ago(now, record.tc_since)}: {record.tc_message}"
            )
    table.add_row("tracked", "yes" if view.tracked else "no (its Workflow was seen gone)")
    if view.seen:
        table.add_row("latest event", f"rv {view.seen[0]}, {ago(now, view.seen[1])}")
    table.add_row("observe queued", "yes" if view.observe_pending else "no")
    lock = (
        "free" if view.lock_ttl_ms is None else f"held, expires in {view.lock_ttl_ms / 1000:.1f} s"
    )
    table.add_row("lock", lock)
    table.add_row("sent once", ", ".join(view.marks) or "-")
    table.add_row(
        "deadlines", "; ".join(f"{d.kind} {until(now, d.due)}" for d in view.deadlines) or "-"
    )
    table.add_row(
        "outbox",
        "; ".join(f"{d.message.kind} ({d.entry_id})" for d in view.outbox if d.message) or "-",
    )
    table.add_row(
        "sent tasks", "; ".join(f"{e.name} {ago(now, e.first_sent)}" for e in view.ledger) or "-"
    )
    table.add_row(
        "failures", "; ".join(f"{f.get('task')}: {f.get('reason')}" for f in view.failures) or "-"
    )
    console = report_console()
    console.print(table)
    print_flags(console, flags)
    return verdict(flags)


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

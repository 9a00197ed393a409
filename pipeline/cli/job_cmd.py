"""``coral2-pipeline job show JOBID [--json]``: one job's story on one screen.

The timeline (:mod:`pipeline.store.timeline`): each request of Flux's the pipeline
served, each state of the job's Workflow with how long DWS took and how soon we moved
on, each run of our tasks with its attempt and outcome, each message sent to Flux
(drains among them). Then where the job stands: its VNIs and CXI services node by
node, its hardware-collective reservation (the token redacted), the drains it caused,
and what is still pending (messages Flux has not taken, tasks without an outcome,
deadlines). It reads only: the monitoring role is enough.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table

from pipeline.cli.common import CommandError, settings_of
from pipeline.cli.tables import report_console
from pipeline.errors import InputError
from pipeline.model.hostlist import unique_hostlist
from pipeline.model.hwcoll import REDACTED
from pipeline.model.jobid import decode_jobid, encode_f58
from pipeline.store import Store
from pipeline.store.report import JobView, job_view
from pipeline.store.timeline import Entry


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser("job", help="show one job's timeline and where it stands")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    show = verbs.add_parser(
        "show",
        help="one job's timeline: Flux's requests, DWS states, our tasks, messages to Flux",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    show.add_argument("jobid", metavar="JOBID", help="the job (decimal or F58)")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the job's story; exit 1 when the store holds nothing about it."""
    try:
        jobid = decode_jobid(args.jobid)
    except InputError as exc:
        raise CommandError(f"{exc} (give it in decimal or F58, e.g. ƒ2n6QhDjk)") from exc
    settings = settings_of(args)
    store = Store.from_url(settings.store_url, settings.pipeline.key_prefix)
    try:
        view = job_view(store, jobid)
        timeline = store.timeline.read(jobid)
    finally:
        store.close()
    if not view.known and not timeline:
        print(
            f"no trace of job {jobid} in the job store: never seen by the pipeline, or "
            "forgotten pipeline.retention after its Workflow was deleted"
        )
        return 1
    story = story_of(view, timeline)
    if args.json:
        print(json.dumps(story, sort_keys=True))
    else:
        _print(report_console(), story)
    return 0


def story_of(view: JobView, timeline: list[Entry]) -> dict[str, Any]:
    """The job's story as JSON data (what ``--json`` prints, and the screen shows)."""
    record = view.record
    story: dict[str, Any] = {
        "jobid": view.jobid,
        "f58": encode_f58(view.jobid),
        "state": record.state if record else None,
        "workflow": record.workflow if record else None,
        "hosts": unique_hostlist(record.hosts) if record and record.hosts else "",
        "rabbits": unique_hostlist(record.rabbits) if record and record.rabbits else "",
        "timeline": [{"at": e.at, "source": e.source, "what": e.what} for e in timeline],
        "drains": [e.what.removeprefix("drain ") for e in timeline if _is_drain(e)],
        "pending": {
            "to_flux": [d.message.kind for d in view.outbox if d.message],
            "tasks": [e.name for e in view.ledger],
            "deadlines": {d.kind: d.due for d in view.deadlines},
        },
        "failures": [f"{f.get('task')}: {f.get('reason')}" for f in view.failures],
    }
    if record is not None and record.slingshot is not None:
        sling = record.slingshot
        answered = set(view.answered.get("prolog", []))
        clean = {*sling.clean, *view.answered.get("clean", [])}  # counted, not yet confirmed
        released = bool(record.node_work and record.node_work.released)
        nodes = sling.nodes or (record.node_work.nodes if record.node_work else record.hosts)
        story["slingshot"] = {
            "vnis": sling.vnis,
            "reason": sling.reason,
            "nodes": {
                node: (
                    "services gone"
                    if node in clean
                    else "services made"
                    if node in answered or released
                    else "waiting for its prolog"
                )
                for node in nodes
            },
            "released": sling.released,
            "drained_busy": sling.drained,
        }
    if record is not None and record.hwcoll is not None:
        kept = record.hwcoll
        story["hwcoll"] = {
            "fm_job_id": kept.fm_job_id,
            "mcast_limit": kept.mcast_limit,
            "step": kept.step,
            "token": REDACTED,
            "released": kept.released,
        }
    return story


def _is_drain(entry: Entry) -> bool:
    return entry.source == "sent" and entry.what.startswith("drain ")


def _clock(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S.%f")[:-3]


def _print(console: Console, story: dict[str, Any]) -> None:
    title = f"job {story['jobid']} ({story['f58']})"
    head = [f"state {story['state'] or '-'}", f"workflow {story['workflow'] or '-'}"]
    head += [f"hosts {story['hosts'] or '-'}", f"rabbits {story['rabbits'] or '-'}"]
    console.print(f"[bold]{title}[/bold]  " + ", ".join(head), highlight=False)
    entries = story["timeline"]
    if entries:
        start = entries[0]["at"]
        table = Table(title=f"timeline (UTC, from {_clock(start)})", title_justify="left")
        for column in ("at", "+s", "from", "what"):
            table.add_column(column, overflow="fold")
        for entry in entries:
            table.add_row(
                _clock(entry["at"]),
                f"{entry['at'] - start:.3f}",
                entry["source"],
                entry["what"],
            )
        console.print(table)
    else:
        console.print("timeline: nothing kept for this job")
    if sling := story.get("slingshot"):
        by_state: dict[str, list[str]] = {}
        for node, state in sling["nodes"].items():
            by_state.setdefault(state, []).append(node)
        vnis = ",".join(map(str, sling["vnis"])) or f"none ({sling['reason']})"
        nodes = "; ".join(f"{s} on {unique_hostlist(n)}" for s, n in sorted(by_state.items()))
        released = ", VNIs released" if sling["released"] else ""
        console.print(f"VNIs {vnis}: CXI {nodes or '-'}{released}", highlight=False)
    if hw := story.get("hwcoll"):
        console.print(
            f"hardware collectives: {hw['fm_job_id']}, {hw['mcast_limit']} addresses, step "
            f"{hw['step']}, token {hw['token']}{', released' if hw['released'] else ''}",
            highlight=False,
        )
    console.print(f"drains it caused: {'; '.join(story['drains']) or 'none'}", highlight=False)
    pending = story["pending"]
    now = time.time()
    waits = [f"to Flux: {', '.join(pending['to_flux'])}"] if pending["to_flux"] else []
    waits += (
        [f"tasks without an outcome: {', '.join(pending['tasks'])}"] if pending["tasks"] else []
    )
    waits += [f"deadline {k} in {due - now:.0f} s" for k, due in pending["deadlines"].items()]
    console.print(f"pending: {'; '.join(waits) or 'nothing'}", highlight=False)
    for failure in story["failures"]:
        console.print(f"[red]failed for good:[/red] {failure}", highlight=False)

"""``coral2-pipeline resource``: the RFC 44 resource eventlog — drained nodes, drains and
undrains, the journal, compaction.

``status`` and ``journal`` read the eventlog the pipeline keeps in Redis (the
Flux resource journal as the bridge mirrors it; the simulated Flux's own
eventlog in the demo). ``drain`` and ``undrain`` go to Flux through the
outbox, signed like every entry the workers write, so Flux records them and
the journal brings them back: they act when a bridge (or the demo's Flux)
delivers them.
"""

from __future__ import annotations

import argparse
import datetime
import json
import signal
import threading
import time
from typing import Any

from pipeline.cli import kinds
from pipeline.cli.common import CommandError, settings_of
from pipeline.cli.tables import SafeTable, report_console
from pipeline.errors import HostlistError
from pipeline.model.hostlist import expand_hostlist, expand_hostnames, unique_hostlist
from pipeline.platform.sealing import seal_of
from pipeline.store import OutboxMessage, Store


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "resource",
        help="drained nodes, drain/undrain, the RFC 44 resource journal",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    status = verbs.add_parser("status", help="drained nodes with reasons and times")
    status.add_argument("--json", action="store_true", help="one JSON object")
    status.set_defaults(func=run_status)
    drain = verbs.add_parser("drain", help="ask Flux to drain TARGETS (a hostlist)")
    drain.add_argument("targets", metavar="TARGETS")
    drain.add_argument("reason", nargs="*", metavar="REASON")
    mode = drain.add_mutually_exclusive_group()
    mode.add_argument("-u", "--update", action="store_true", help="update the reason only")
    mode.add_argument("-f", "--force", action="store_true", help="reason and timestamp")
    _waiting(drain)
    drain.set_defaults(func=run_drain)
    undrain = verbs.add_parser("undrain", help="ask Flux to undrain TARGETS (a hostlist)")
    undrain.add_argument("targets", metavar="TARGETS")
    _waiting(undrain)
    undrain.set_defaults(func=run_undrain)
    journal = verbs.add_parser(
        "journal", help="print the journal: one JSON response a line, ending at the sentinel"
    )
    journal.add_argument(
        "-f", "--follow", action="store_true", help="go on with live events until Ctrl-C"
    )
    journal.set_defaults(func=run_journal)
    compact = verbs.add_parser("compact", help="fold the eventlog, keeping what it replays to")
    compact.set_defaults(func=run_compact)


#: How long drain and undrain wait for the flux-bridge to take their request (s).
WAIT_S = 10.0


def _waiting(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait",
        type=kinds.seconds(zero=True, most=86_400),
        default=WAIT_S,
        metavar="SECONDS",
        help=f"wait this long for the flux-bridge to deliver it (default {WAIT_S:g})",
    )
    parser.add_argument(
        "--no-wait", action="store_true", help="queue it for the flux-bridge and return"
    )


def _send(args: argparse.Namespace, message: OutboxMessage, what: str) -> int:
    """Queue ``message`` for the flux-bridge; unless ``--no-wait``, wait until it took it:
    delivered (0), refused (its reason: an entry not signed with the management key is
    one), or not taken in time (the bridge is not running): one line, and exit 1."""
    if args.wait <= 0:
        raise CommandError(f"--wait must be positive, got {args.wait:g}")
    store = _store(args, signed=True)
    entry = store.outbox.append(message)
    if args.no_wait:
        print(f"{what} queued for the flux-bridge")
        return 0
    deadline = time.monotonic() + args.wait
    while store.outbox.holds(entry):
        if time.monotonic() > deadline:
            raise CommandError(
                f"{what} is queued, but the flux-bridge has not taken it in {args.wait:g} s: "
                "is it running? It goes to Flux once the bridge is back "
                "(`coral2-pipeline status` shows the outbox)"
            )
        time.sleep(0.05)
    refused = [d for d in store.dead_letters.latest(50) if d.where == f"outbox {entry}"]
    if refused:
        hint = ""
        if "not signed" in refused[0].reason or "signature" in refused[0].reason:
            hint = (
                ": the bridge takes only requests signed with the management key; run this "
                "with the settings that name pipeline.security_key"
            )
        raise CommandError(f"the flux-bridge refused the {what}: {refused[0].reason}{hint}")
    print(f"{what} delivered to Flux")
    return 0


def _store(args: argparse.Namespace, signed: bool = False) -> Store:
    settings = settings_of(args)
    seal = seal_of(settings.pipeline) if signed else None
    return Store.from_url(settings.store_url, settings.pipeline.key_prefix, seal)


def _nodelist(store: Store) -> str:
    restarts = [e for e in store.resource_log.events() if e.get("name") == "restart"]
    if not restarts:
        raise CommandError(
            "the resource eventlog holds no restart event yet: no Flux instance has posted "
            "its nodelist (is the flux-bridge running?)"
        )
    return str(restarts[-1]["context"]["nodelist"])


def run_status(args: argparse.Namespace) -> int:
    """Print the drained nodes; exit 0."""
    store = _store(args)
    nodelist = _nodelist(store)
    hosts = expand_hostlist(nodelist)
    drained = sorted(store.resource_log.drained(nodelist).items())
    if args.json:
        rows = [
            {"rank": r, "host": hosts[r], "timestamp": t, "reason": why} for r, (t, why) in drained
        ]
        print(json.dumps({"nodelist": nodelist, "drained": rows}, sort_keys=True))
        return 0
    table = SafeTable(title=f"drained: {len(drained)} of {len(hosts)} nodes")
    for column in ("host", "rank", "since", "reason"):
        table.add_column(column, overflow="fold")
    for rank, (stamp, reason) in drained:
        when = datetime.datetime.fromtimestamp(stamp).isoformat(sep=" ", timespec="seconds")
        table.add_row(hosts[rank], str(rank), when, reason)
    report_console().print(table)
    return 0


def _targets(text: str) -> str:
    try:
        hosts = expand_hostnames(text)
    except HostlistError as exc:
        raise CommandError(f"TARGETS: {exc}") from None
    return unique_hostlist(hosts)


def run_drain(args: argparse.Namespace) -> int:
    """Send a drain to Flux through the outbox (:func:`_send`)."""
    payload: dict[str, Any] = {"targets": _targets(args.targets), "reason": " ".join(args.reason)}
    if args.update or args.force:
        payload["mode"] = "update" if args.update else "overwrite"
    return _send(args, OutboxMessage("drain", None, payload), f"drain of {payload['targets']}")


def run_undrain(args: argparse.Namespace) -> int:
    """Send an undrain to Flux through the outbox (:func:`_send`)."""
    payload = {"targets": _targets(args.targets)}
    message = OutboxMessage("undrain", None, payload)
    return _send(args, message, f"undrain of {payload['targets']}")


def run_journal(args: argparse.Namespace) -> int:
    """Print journal responses until the sentinel (or, with --follow, until interrupted)."""
    cancel = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: cancel.set())
    signal.signal(signal.SIGTERM, lambda *_: cancel.set())
    for response in _store(args).resource_log.journal(cancel, block_ms=200):
        print(json.dumps(response, separators=(",", ":")), flush=True)
        if not response["events"] and not args.follow:
            break
    return 0


def run_compact(args: argparse.Namespace) -> int:
    """Compact the eventlog; exit 0."""
    before, after = _store(args).resource_log.compact()
    print(f"resource eventlog: {before} events folded into {after}")
    return 0

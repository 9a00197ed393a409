"""``coral2-pipeline deadletters``: the messages no process could decode or deliver."""

from __future__ import annotations

import argparse
import datetime
import json
from typing import Any

from pipeline.cli import kinds
from pipeline.cli.common import settings_of
from pipeline.cli.tables import SafeTable, report_console
from pipeline.store import Store


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "deadletters",
        help="list (or clear) the messages set aside because nothing could use them",
        description=(
            "Messages no worker could decode or run, and outbox entries the bridge could not "
            "make a Flux request of, are set aside with their raw bytes (the newest 1,000 are "
            "kept). List them, newest first; --clear drops the kept ones once read."
        ),
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='print one JSON object: {"kept": N, "total": N, "letters": [newest first]}',
    )
    parser.add_argument(
        "--limit",
        type=kinds.count(least=1, most=100_000),
        default=20,
        metavar="N",
        help="how many to show (default 20)",
    )
    parser.add_argument("--clear", action="store_true", help="drop every kept dead letter")
    parser.add_argument(
        "--clear-node",
        metavar="HOST",
        help="forget that HOST's answers were refused wholesale (status stops naming it), "
        "once the node was dealt with (docs/runbook.md)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """List or clear; exit 0."""
    settings = settings_of(args)
    store = Store.from_url(settings.store_url, settings.pipeline.key_prefix)
    letters = store.dead_letters
    if args.clear_node:
        store.answers.unflag(args.clear_node)
        print(f"{args.clear_node}: no longer flagged")
        return 0
    if args.clear:
        print(f"dropped {letters.clear()} dead letter(s)")
        return 0
    latest = letters.latest(args.limit)
    kept, total = letters.counts()
    if args.json:  # one object, an empty list included: a reader parses what it gets
        shown = [letter.model_dump() for letter in latest]
        print(json.dumps({"kept": kept, "total": total, "letters": shown}, sort_keys=True))
        return 0
    table = SafeTable(title=f"dead letters: {kept} kept, {total} ever set aside (newest first)")
    for column in ("when", "from", "why", "bytes", "raw (start)"):
        table.add_column(column, overflow="fold")
    for letter in latest:
        when = datetime.datetime.fromtimestamp(letter.at).isoformat(sep=" ", timespec="seconds")
        table.add_row(when, letter.where, letter.reason, str(letter.size), letter.raw[:200])
    report_console().print(table)
    return 0

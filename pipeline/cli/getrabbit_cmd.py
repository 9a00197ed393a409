"""``coral2-pipeline getrabbit``: rabbit ⇄ compute lookups, as ``flux getrabbit``."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.cli.common import CommandError, load_mapping, settings_of
from pipeline.errors import RabbitMappingError
from pipeline.model.hostlist import expand_hostlist


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "getrabbit",
        help="look up the rabbits of computes, or the computes of rabbits",
        description=(
            "Print the rabbits of the given computes (-c), or the computes of the given "
            "rabbits; with no argument, every rabbit. Output is one folded hostlist. "
            "The mapping comes from --mapping or rabbit.mapping in the config."
        ),
    )
    parser.add_argument("--mapping", metavar="FILE", help="rabbitmapping JSON file")
    parser.add_argument(
        "-c",
        "--computes",
        nargs="+",
        metavar="HOSTS",
        help="hostlists of computes whose rabbits to print",
    )
    parser.add_argument("rabbits", nargs="*", metavar="RABBITS", help="hostlists of rabbits")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the looked-up hostlist."""
    path = args.mapping or settings_of(args).rabbit.mapping
    if not path:
        raise CommandError(
            "Flux is misconfigured, 'rabbit.mapping' key not set in current instance or "
            "root/system instance (pass --mapping FILE or set rabbit.mapping in --config FILE)"
        )
    if args.rabbits and args.computes:
        raise CommandError(
            "Both rabbits and computes or jobids cannot be looked up at the same time"
        )
    mapping = load_mapping(path)
    try:
        if args.computes:
            hosts = [h for text in args.computes for h in expand_hostlist(text)]
            print(mapping.rabbits_of(hosts))
        elif args.rabbits:
            rabbits = [r for text in args.rabbits for r in expand_hostlist(text)]
            print(mapping.computes_of_rabbits(rabbits))
        else:
            print(mapping.all_rabbits())
    except RabbitMappingError as exc:
        raise CommandError(str(exc)) from exc
    return 0

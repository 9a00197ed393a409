"""``coral2-pipeline getrabbit``: rabbit ⇄ compute lookups, as ``flux getrabbit``."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.cli import kinds
from pipeline.cli.common import CommandError, load_mapping, settings_of
from pipeline.errors import InputError, RabbitMappingError, StoreUnavailable
from pipeline.model.hostlist import expand_hostlist, unique_hostlist
from pipeline.model.jobid import decode_jobid


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
    parser.add_argument(
        "--mapping", type=kinds.FILE, metavar="FILE", help="rabbitmapping JSON file"
    )
    parser.add_argument(
        "-c",
        "--computes",
        nargs="+",
        metavar="HOSTS",
        help="hostlists of computes whose rabbits to print",
    )
    parser.add_argument(
        "-j",
        "--jobids",
        nargs="+",
        metavar="ID",
        help="jobs (decimal or F58) whose rabbits to print, from the job store",
    )
    parser.add_argument("rabbits", nargs="*", metavar="RABBITS", help="hostlists of rabbits")
    parser.set_defaults(func=run)


def _job_rabbits(args: argparse.Namespace) -> list[str]:
    from pipeline.store import Store

    settings = settings_of(args)
    store = Store.from_url(settings.store_url, settings.pipeline.key_prefix)
    rabbits: list[str] = []
    for text in args.jobids:
        try:
            jobid = decode_jobid(text)
        except InputError:
            raise CommandError(f"Lookup of job {text} failed: not a jobid") from None
        try:
            record = store.jobs.get(jobid)
        except StoreUnavailable as exc:
            raise CommandError(f"Lookup of job {text} failed: {exc}") from exc
        if record is None:
            raise CommandError(f"Could not find job {text}")
        if not record.rabbits:
            raise CommandError(f"No rabbits found for job {text}")
        rabbits.extend(record.rabbits)
    return rabbits


def run(args: argparse.Namespace) -> int:
    """Print the looked-up hostlist."""
    path = args.mapping or settings_of(args).rabbit.mapping
    if not path:
        raise CommandError(
            "Flux is misconfigured, 'rabbit.mapping' key not set in current instance or "
            "root/system instance (pass --mapping FILE or set rabbit.mapping in --config FILE)"
        )
    if args.rabbits and (args.computes or args.jobids):
        raise CommandError(
            "Both rabbits and computes or jobids cannot be looked up at the same time"
        )
    mapping = load_mapping(path)
    try:
        if args.computes or args.jobids:
            hosts = [h for text in args.computes or [] for h in expand_hostlist(text)]
            rabbits = _job_rabbits(args) if args.jobids else []
            print(unique_hostlist([*rabbits, *(mapping.rabbit_of(h) for h in hosts)]))
        elif args.rabbits:
            rabbits = [r for text in args.rabbits for r in expand_hostlist(text)]
            print(mapping.computes_of_rabbits(rabbits))
        else:
            print(mapping.all_rabbits())
    except RabbitMappingError as exc:
        raise CommandError(str(exc)) from exc
    return 0

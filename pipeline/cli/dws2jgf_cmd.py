"""``coral2-pipeline dws2jgf``: R + rabbitmapping → Fluxion JGF, as ``flux dws2jgf``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pipeline.cli import kinds
from pipeline.cli.common import CommandError, load_mapping, read_json, settings_of
from pipeline.model.files import FileProblem, load
from pipeline.model.jgf import DEFAULT_CHUNKS_PER_NNF, Dws2Jgf
from pipeline.model.resource_set import r_from_config


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "dws2jgf",
        help="print the JGF (chassis/ssd graph) of R and a rabbitmapping",
        description=(
            "Print the Fluxion JGF representation of the system: R (RFC 20) read on stdin, "
            "or built from the [resource] table of --from-config FILE, plus chassis and ssd "
            "vertices from the rabbitmapping. Same output as 'flux dws2jgf'."
        ),
    )
    parser.add_argument(
        "--no-validate",
        action="store_true",
        help="do not fail when the mapping names computes missing from R",
    )
    parser.add_argument(
        "-c",
        "--chunks-per-nnf",
        type=kinds.count(least=1, most=4096),
        default=DEFAULT_CHUNKS_PER_NNF,
        metavar="N",
        help="ssd vertices per rabbit (default %(default)s); more allows finer scheduling",
    )
    parser.add_argument(
        "--cluster-name", help="cluster vertex name (default: this host's name without digits)"
    )
    parser.add_argument(
        "--from-config",
        type=kinds.FILE,
        metavar="FILE",
        help="build R from the [resource] table of this Flux TOML file instead of stdin",
    )
    parser.add_argument(
        "--only-sched", action="store_true", help="print only the 'scheduling' value"
    )
    parser.add_argument(
        "rabbitmapping",
        nargs="?",
        type=kinds.FILE,
        metavar="RABBITMAPPING",
        help="rabbitmapping JSON (default: rabbit.mapping from the config)",
    )
    parser.set_defaults(func=run)


def _from_config(path: str) -> tuple[dict[str, Any], str]:
    try:
        data = load(path, "config file", "toml")
    except FileProblem as exc:  # flux dws2jgf's words, then ours
        raise FileProblem(
            f"Could not parse config file {path!r}, error message was {exc}"
        ) from None
    resource = data.get("resource", {})
    if not isinstance(resource, dict) or not resource.get("config"):
        raise CommandError(
            f"Could not parse config file {path!r}, error message was: "
            "no [[resource.config]] entries"
        )
    exclude = resource.get("exclude", "")
    if not isinstance(exclude, str):
        raise CommandError(f"resource.exclude in {path!r} must be a string, got {exclude!r}")
    return r_from_config(resource["config"]), exclude


def run(args: argparse.Namespace) -> int:
    """Write the JGF document to stdout."""
    settings = settings_of(args)
    if args.from_config:
        raw_r, exclude = _from_config(args.from_config)
    else:
        raw_r = read_json("-", "R")
        exclude = settings.resource.exclude
    if not isinstance(raw_r, dict):
        raise CommandError("R must be a JSON object (RFC 20)")
    path = args.rabbitmapping or settings.rabbit.mapping
    if not path:
        raise CommandError("Could not fetch rabbit.mapping from config, Flux may be misconfigured")
    encoder = Dws2Jgf(
        raw_r,
        load_mapping(path),
        chunks_per_nnf=args.chunks_per_nnf,
        cluster_name=args.cluster_name,
        exclude=exclude,
        validate=not args.no_validate,
    )
    out = sys.stdout
    for chunk in encoder.chunks_of_text(only_sched=args.only_sched):
        out.write(chunk)
    out.flush()
    return 0

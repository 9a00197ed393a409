"""``coral2-pipeline breakdown``: what DirectiveBreakdowns do to a job, for debugging."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pipeline.cli import kinds
from pipeline.cli.common import CommandError, load_mapping, read_json, settings_of
from pipeline.model.breakdown import (
    ResourceLimits,
    apply_breakdowns,
    build_allocation_sets,
    summarize_breakdowns,
)
from pipeline.model.breakdown_types import as_breakdowns
from pipeline.model.files import load
from pipeline.model.hostlist import expand_hostlist
from pipeline.model.numbers import MAX_COUNT, natural, natural_or_none


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "breakdown",
        help="show how DirectiveBreakdowns rewrite a jobspec and fill Servers",
        description=(
            "Apply DirectiveBreakdowns (YAML or JSON, as 'kubectl get directivebreakdown -o "
            "yaml' prints them) to jobspec resources, then compute the Servers allocation "
            "sets for a placement given as --nodes-per-rabbit or --hosts with --mapping. "
            "Prints JSON; exits 1 with flux-coral2's message when the job would be rejected."
        ),
    )
    parser.add_argument(
        "--breakdown",
        type=kinds.FILE,
        nargs="+",
        required=True,
        metavar="FILE",
        help="DirectiveBreakdown files (several documents per file allowed)",
    )
    parser.add_argument(
        "--resources",
        type=kinds.FILE_OR_STDIN,
        required=True,
        metavar="FILE",
        help="jobspec resources JSON (a list, or a whole jobspec with 'resources'); - = stdin",
    )
    parser.add_argument(
        "--min-size",
        type=kinds.count(least=1, most=1 << 20),
        default=4,
        metavar="GiB",
        help="minimum allocation (default 4)",
    )
    placement = parser.add_mutually_exclusive_group()
    placement.add_argument(
        "--nodes-per-rabbit",
        metavar="R=N,...",
        help="the job's compute count behind each rabbit, e.g. rabbit1=16,rabbit2=4",
    )
    placement.add_argument(
        "--hosts", metavar="HOSTLIST", help="the job's computes (needs a mapping)"
    )
    parser.add_argument(
        "--mapping", type=kinds.FILE, metavar="FILE", help="rabbitmapping for --hosts"
    )
    parser.set_defaults(func=run)


def _load_breakdowns(paths: list[str]) -> list[Any]:
    docs: list[Any] = []
    for path in paths:
        for doc in load(path, "breakdown file", "yaml"):
            if isinstance(doc, dict) and doc.get("kind") == "List":
                docs.extend(doc.get("items", []))
            else:
                docs.append(doc)
    return docs


def _nodes_per_rabbit(args: argparse.Namespace, mapping_path: str | None) -> dict[str, int] | None:
    if args.mapping and not args.hosts:  # it would be read for nothing
        raise CommandError("--mapping goes with --hosts HOSTLIST (the job's computes)")
    if args.nodes_per_rabbit:
        counts: dict[str, int] = {}
        for item in args.nodes_per_rabbit.split(","):
            rabbit, sep, count = item.partition("=")
            if not sep or not rabbit or not (natural_or_none(count, most=MAX_COUNT) or 0) >= 1:
                raise CommandError(
                    f"--nodes-per-rabbit entry {item!r} must look like rabbit1=16 (count >= 1)"
                )
            counts[rabbit] = counts.get(rabbit, 0) + natural(count, most=MAX_COUNT)
        return counts
    if args.hosts:
        if not mapping_path:
            raise CommandError("--hosts needs --mapping FILE or rabbit.mapping in the config")
        return load_mapping(mapping_path).nodes_per_rabbit(expand_hostlist(args.hosts))
    return None


def run(args: argparse.Namespace) -> int:
    """Print the rewritten resources, the allocation sets and the placement summary."""
    settings = settings_of(args)
    resources = read_json(args.resources, "jobspec resources")
    if isinstance(resources, dict) and "resources" in resources:
        resources = resources["resources"]
    if not isinstance(resources, list):
        raise CommandError("jobspec resources must be a JSON list (or a jobspec object)")
    breakdowns = as_breakdowns(_load_breakdowns(args.breakdown))
    limits = ResourceLimits(**settings.rabbit.policy.maximums.model_dump())
    summary = summarize_breakdowns(breakdowns, allowed_daemons=settings.rabbit.allowed_daemons)
    rewritten = apply_breakdowns(breakdowns, resources, min_size_gib=args.min_size, limits=limits)
    result: dict[str, Any] = {
        "resources": rewritten if rewritten is not None else resources,
        "already_applied": rewritten is None,
        "placement": summary.placement,
        "required_daemons": list(summary.required_daemons),
        "lustre": summary.lustre,
    }
    counts = _nodes_per_rabbit(args, args.mapping or settings.rabbit.mapping)
    if counts is not None:
        servers = []
        for bd in breakdowns:
            if bd.status.storage is None:
                continue
            servers.append(
                {
                    "breakdown": bd.name,
                    "servers": bd.status.storage.reference.name,
                    "allocationSets": build_allocation_sets(
                        bd.status.storage.allocationSets,
                        counts,
                        sum(counts.values()),
                        min_alloc_gib=args.min_size,
                    ),
                }
            )
        result["servers"] = servers
    print(json.dumps(result, indent=2))
    return 0

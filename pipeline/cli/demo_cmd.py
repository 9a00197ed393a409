"""``coral2-pipeline demo``: the embedded walk-through on the bundled sample cluster."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.demo import run_demo


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "demo",
        help="run the embedded demo on the bundled sample cluster",
        description=(
            "Build the sample cluster's resource graph and take a batch of jobs through "
            "directive parsing, breakdowns, policy checks and rabbit placement; then start the "
            "simulated system (Redis, API server, DWS controller, watcher, Celery worker and "
            "beat) and drive raw Workflows through every state. "
            "Exits non-zero if any job does not end as expected. "
            "--config FILE (before 'demo') uses your own settings."
        ),
    )
    parser.add_argument(
        "--workflows",
        type=int,
        default=8,
        metavar="N",
        help="raw Workflows to drive through the live platform (default 8)",
    )
    parser.add_argument(
        "--model-only",
        action="store_true",
        help="run only the domain-model walk-through (no Redis, no services)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo."""
    return run_demo(args.config, platform=not args.model_only, workflows=args.workflows)

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
            "directive parsing, breakdowns, policy checks and rabbit placement. "
            "Exits non-zero if any job does not end as expected. "
            "--config FILE (before 'demo') uses your own settings."
        ),
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo."""
    return run_demo(args.config)

"""``coral2-pipeline demo``: the embedded demo on the bundled sample cluster."""

from __future__ import annotations

import argparse
import os
from typing import Any

from coral2_sim.demo.model import run_demo
from pipeline.cli import kinds
from pipeline.cli.common import CommandError


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "demo",
        help="run the embedded demo on the bundled sample cluster",
        description=(
            "Walk a batch of jobs through the domain model (directives, breakdowns, policy, "
            "placement), then start the whole simulated system — redis-server, the "
            "Kubernetes-compatible API server with the DWS controller, the Celery worker and "
            "beat, the watcher, a node worker and the simulated Flux job manager — submit a "
            "mixed batch of jobs and report outcomes, transition latency and leaks. "
            "Exits non-zero if a job does not end as expected or anything leaks."
        ),
    )
    parser.add_argument(
        "--jobs",
        type=kinds.count(least=1, most=10_000),
        default=24,
        metavar="N",
        help="jobs in the batch (default 24)",
    )
    parser.add_argument(
        "--config",
        type=kinds.FILE,
        metavar="FILE",
        default=argparse.SUPPRESS,
        help="settings TOML (default: the bundled sample cluster's)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (jobs, latency_ms, leaks, wall_s) instead of tables",
    )
    parser.add_argument(
        "--keep-running",
        action="store_true",
        help="leave the system up afterwards, with Flower on a loopback URL, until Ctrl-C",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the run's work directory (logs, and the keys and passwords made for "
        "it) instead of removing it at exit, and print where it is",
    )
    parser.add_argument(
        "--flux",
        choices=("sim", "real"),
        default="sim",
        help="the Flux the batch runs on: the simulated job manager (default), or the "
        "flux-core with Fluxion and flux-coral2's plugins this machine has installed "
        "(FLUX_PREFIX, else `flux` on PATH; FLUX_CORAL2_PREFIX when flux-coral2 lies apart)",
    )
    parser.add_argument(
        "--flux-prefix",
        metavar="DIR",
        help="with --flux real: flux-core's installation prefix (default: $FLUX_PREFIX, "
        "else the one of `flux` on PATH)",
    )
    parser.add_argument(
        "--dws",
        choices=("sim", "real"),
        default="sim",
        help="the DWS and nnf-sos the batch runs on: the simulated ones (default), or the "
        "real managers on a real Kubernetes API server that make dws-real built "
        "(docs/testing.md); with real, the jobs and cases that need nnf-dm's data movement "
        "or an injected fault are left out, each named",
    )
    parser.add_argument(
        "--no-systemstatus",
        action="store_true",
        help="run on a DWS without SystemStatus default, as a site whose install made none "
        "(neither dws nor nnf-sos creates it): the drains still reach Flux",
    )
    parser.add_argument(
        "--model-only",
        action="store_true",
        help="run only the domain-model walk-through (no Redis, no services)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo."""
    if args.jobs < 1:
        raise CommandError(f"--jobs must be at least 1, got {args.jobs}")
    if args.flux_prefix and args.flux != "real":
        raise CommandError("--flux-prefix goes with --flux real")
    site = None
    if args.flux == "real":  # before anything starts: what is missing, one line each
        from pipeline.clients.flux_site import find_flux

        env = dict(os.environ)
        if args.flux_prefix:
            env["FLUX_PREFIX"] = args.flux_prefix
        site = find_flux(env)
    if args.dws == "real":  # before anything starts: what is missing, in one line
        from coral2_sim.dws_real_found import NotBuilt, RealDws

        try:
            RealDws.find()
        except NotBuilt as exc:
            raise CommandError(f"--dws real: {exc}") from None
    return run_demo(
        args.config,
        lifecycle=not args.model_only,
        jobs=args.jobs,
        as_json=args.json,
        keep_running=args.keep_running,
        flux_site=site,
        keep=args.keep,
        systemstatus=not args.no_systemstatus,
        dws=args.dws,
    )

"""``coral2-pipeline sim kube-api``: run the simulated Kubernetes API server standalone."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from pipeline.cli.common import CommandError
from pipeline.sim.kube_api import KubeApiServer


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "sim",
        help="run one of the embedded simulators standalone",
        description="Run an embedded simulator until interrupted (Ctrl-C or SIGTERM).",
    )
    sims = parser.add_subparsers(dest="simulator", metavar="SIMULATOR", required=True)
    kube = sims.add_parser(
        "kube-api",
        help="a Kubernetes-compatible API server serving the DWS resources",
        description=(
            "Serve the DWS custom resources (and Secrets) on loopback. The URL is printed on "
            "the first line of stdout; point the official client or kubectl at it "
            "(kubectl --server URL --insecure-skip-tls-verify get workflows)."
        ),
    )
    kube.add_argument("--host", default="127.0.0.1", help="address to bind (default %(default)s)")
    kube.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    kube.set_defaults(func=run_kube_api)


def run_kube_api(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM."""
    try:
        server = KubeApiServer(args.host, args.port).start()
    except OSError as exc:
        raise CommandError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from exc
    print(server.url, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    print("kube-api stopped", file=sys.stderr)
    return 0

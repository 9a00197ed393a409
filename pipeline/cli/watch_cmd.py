"""``coral2-pipeline watch``: run one watcher replica (leader election through Redis)."""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

from pipeline.cli import kinds
from pipeline.cli.common import CommandError, add_verbose, settings_of, setup_logging
from pipeline.clients.k8s import DwsClient, api_client
from pipeline.clients.lease import LeaseMirror
from pipeline.platform import heap
from pipeline.platform.systemd import Watchdog, notify
from pipeline.services.watcher import Watcher
from pipeline.store import Store


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "watch",
        help="watch Workflows and Storages and enqueue observe tasks",
        description=(
            "Watch the DWS Workflows and Storages and enqueue dws.observe / storage.observe. "
            "Run two replicas for HA: one leads through a Redis lock, the other takes over "
            "within --lease seconds of the leader's death."
        ),
    )
    parser.add_argument(
        "--lease",
        type=kinds.seconds(most=600),
        default=3.0,
        metavar="SECONDS",
        help="leader lease (default 3)",
    )
    add_verbose(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Watch until SIGINT/SIGTERM."""
    if not 0.3 <= args.lease <= 3600:
        raise CommandError(f"--lease must be between 0.3 and 3600 seconds, got {args.lease:g}")
    setup_logging(args.verbose)
    settings = settings_of(args)
    from pipeline.platform.app import create_app, sender

    app = create_app(settings)
    store = Store.from_url(settings.store_url, settings.pipeline.key_prefix)
    kubeconfig = settings.pipeline.kubeconfig or settings.rabbit.kubeconfig
    dws = DwsClient(
        api_client(host=settings.pipeline.api_host, kubeconfig=kubeconfig),
        namespace=settings.pipeline.namespace,
    )
    dws.probe_version(settings.rabbit.dws_api_version)

    mirror = LeaseMirror(dws.api, settings.pipeline.namespace)
    watcher = Watcher(store, dws, sender(app), lease_s=args.lease, mirror=mirror)
    done = threading.Event()

    def stop(*_: object) -> None:
        watcher.stop()
        done.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    thread = threading.Thread(target=watcher.run, name="watcher", daemon=True)
    thread.start()
    heap.settle()
    # ready once Redis answers (the worker's is once it consumes): until then systemd
    # shows the unit "activating", with why in its status
    while not done.is_set() and not watcher.reached.wait(1.0):
        notify(f"STATUS=waiting for Redis: {watcher.outage or 'no answer yet'}")
    notify("READY=1", "STATUS=watching Workflows and Storages")
    watchdog = Watchdog(lambda: thread.is_alive() and watcher.healthy()).start()
    done.wait()
    notify("STOPPING=1")
    watchdog.stop()
    thread.join(timeout=args.lease + 5)
    return 0

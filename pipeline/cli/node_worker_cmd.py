"""``coral2-pipeline node-worker``: the node-pinned worker of one compute node (or several)."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pipeline.cli import kinds
from pipeline.cli.common import CommandError, add_verbose, settings_of, setup_logging
from pipeline.errors import HostlistError
from pipeline.model.files import writable_directory
from pipeline.model.hostlist import expand_hostlist

if TYPE_CHECKING:
    from node_worker.app import Companion
    from node_worker.cxi import Nic
    from node_worker.service import ClientmountService
    from pipeline.settings import Settings

#: Where a production node worker notes the jobs whose epilog ran.
STATE_DIR = Path("/var/lib/coral2-pipeline/node-worker")
#: The entry points of the node worker's plugins (``--backend``/``--nic`` NAME): the
#: simulators' ``simulated`` (coral2-pipeline-sim) is one.
PLUGIN_GROUP = "coral2_pipeline.node_worker"


class NodeBackend(Protocol):
    """A node worker plugin: its options, a clientmount service and NICs."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the plugin's own options to ``node-worker``."""

    def check(self, args: argparse.Namespace) -> None:
        """Refuse an option of the plugin given when the plugin is not chosen."""

    def state_dir(self, args: argparse.Namespace) -> Path:
        """Where the worker keeps its state by default under this backend."""

    def service(
        self, args: argparse.Namespace, settings: Settings, hosts: list[str]
    ) -> tuple[ClientmountService, Companion | None]:
        """The clientmount service of ``hosts``, and what runs beside the worker."""

    def nic(self, args: argparse.Namespace, state: Path) -> Callable[[str], Nic]:
        """host → its NIC."""


def plugins() -> dict[str, NodeBackend]:
    """The installed node worker plugins, by name."""
    from importlib.metadata import entry_points

    found: dict[str, NodeBackend] = {}
    for point in entry_points(group=PLUGIN_GROUP):
        found[point.name] = point.load()
    return found


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "node-worker",
        help="run the node worker (clientmount and CXI services) of this node",
        description=(
            "Consume the node.<hostname> queue(s) and do each job's node work as the pipeline "
            "sends it: CXI services and the clientmount service. --backend systemd controls "
            "the nnf-clientmount unit; --backend simulated also plays the clientmount daemon "
            "for the given nodes (demo, tests). The worker needs no Kubernetes credentials."
        ),
    )
    parser.add_argument(
        "--hostname",
        default=os.uname().nodename,
        help="this node's name, or a hostlist of nodes to serve (default: the local hostname)",
    )
    backends = plugins()
    parser.add_argument(
        "--backend",
        choices=("systemd", *sorted(backends)),
        default="systemd",
        help="what starts and stops the clientmount service: systemctl on the nnf-clientmount "
        "unit (default), or a plugin's (the simulators' 'simulated', with "
        "coral2-pipeline-sim installed)",
    )
    parser.add_argument(
        "--nic",
        choices=("cxi_service", "none", *sorted(backends)),
        default="cxi_service",
        help="how CXI services are made: libcxi's cxi_service command (default), none (no "
        "Slingshot work on these nodes), or a plugin's NICs",
    )
    parser.add_argument(
        "--cxi-devices",
        default="cxi0,cxi1,cxi2,cxi3",
        metavar="LIST",
        help="the node's CXI devices for --nic cxi_service (default cxi0,cxi1,cxi2,cxi3)",
    )
    for backend in backends.values():
        backend.add_arguments(parser)
    parser.add_argument(
        "--state-dir",
        type=kinds.DIR,
        metavar="DIR",
        default=None,
        help="where the worker notes the jobs whose epilog ran, so that a late copy of "
        "their prolog undoes nothing (default /var/lib/coral2-pipeline/node-worker, or "
        "the --backend plugin's)",
    )
    parser.add_argument(
        "--concurrency",
        type=kinds.count(least=1, most=4096),
        default=None,
        help="task threads (default: 4 per node served, at most 256)",
    )
    add_verbose(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run until SIGTERM/SIGINT."""
    backends = plugins()
    for backend in backends.values():
        backend.check(args)  # an option of a backend not chosen is refused, not ignored
    loglevel = setup_logging(args.verbose)
    try:
        hosts = expand_hostlist(args.hostname)
    except HostlistError as exc:
        raise CommandError(f"--hostname: {exc}") from exc
    if not hosts:
        raise CommandError("--hostname names no node")
    from node_worker.app import NodeWorker
    from node_worker.ended import EndedJobs
    from node_worker.service import SystemdService

    settings = settings_of(args)
    chosen = backends.get(args.backend)
    try:
        default_state = STATE_DIR if chosen is None else chosen.state_dir(args)
        state = Path(args.state_dir) if args.state_dir else default_state
        if args.state_dir:
            state = writable_directory(state, "--state-dir", mode=0o700)
        nic_of = _nics(args, backends, state / "nics")
        ended = EndedJobs(state)
        if chosen is None:
            worker = NodeWorker(settings, hosts, SystemdService(), nic_of=nic_of, ended=ended)
        else:
            service, companion = chosen.service(args, settings, hosts)
            worker = NodeWorker(
                settings, hosts, service, companion=companion, nic_of=nic_of, ended=ended
            )
    except ValueError as exc:
        raise CommandError(str(exc)) from exc
    concurrency = args.concurrency or min(256, 4 * len(hosts))
    worker.run(concurrency, loglevel)
    return 0


def _nics(
    args: argparse.Namespace, backends: dict[str, NodeBackend], state: Path
) -> Callable[[str], Nic] | None:
    """host → its NIC backend, as ``--nic`` asks (a plugin's keeps what it needs under
    ``state``, as hardware keeps its services across a restart of the worker)."""
    if args.nic == "none":
        return None
    if args.nic in backends:
        return backends[args.nic].nic(args, state)
    from node_worker.cxi_cli import CxiServiceCli

    devices = [d.strip() for d in args.cxi_devices.split(",") if d.strip()]
    bad = [d for d in devices if not re.fullmatch(r"cxi[0-9]{1,3}", d)]
    if not devices or bad:
        raise CommandError(
            f"--cxi-devices {args.cxi_devices!r}: give the node's CXI devices as a comma list "
            "such as cxi0,cxi1,cxi2,cxi3" + (f" ({bad[0]!r} is not one)" if bad else "")
        )
    cli = CxiServiceCli(devices)
    return lambda host: cli

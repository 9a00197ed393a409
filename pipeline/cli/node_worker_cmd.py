"""``coral2-pipeline node-worker``: the node-pinned worker of one compute node (or several)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.cli import kinds
from pipeline.cli.common import CommandError, add_verbose, settings_of, setup_logging
from pipeline.errors import HostlistError
from pipeline.model.files import writable_directory
from pipeline.model.hostlist import expand_hostlist

if TYPE_CHECKING:
    from node_worker.cxi import Nic
    from pipeline.sim.node.agent import SlowMounts

#: Where a production node worker notes the jobs whose epilog ran.
STATE_DIR = Path("/var/lib/coral2-pipeline/node-worker")


def clientmountd_state(root: Path) -> Path:
    """The simulated clientmount service's flags under ``--sim-root``."""
    return root / ".state" / "clientmount-services.json"


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
    parser.add_argument("--backend", choices=("systemd", "simulated"), default="systemd")
    parser.add_argument(
        "--sim-root",
        type=kinds.DIR,
        metavar="DIR",
        default=None,
        help="where the simulated backend makes mount directories (default /tmp/coral2-mounts)",
    )
    parser.add_argument(
        "--nic",
        choices=("cxi_service", "simulated", "none"),
        default="cxi_service",
        help="how CXI services are made: libcxi's cxi_service command (default), simulated "
        "Cassini NICs (demo, tests), or none (no Slingshot work on these nodes)",
    )
    parser.add_argument(
        "--cxi-devices",
        default="cxi0,cxi1,cxi2,cxi3",
        metavar="LIST",
        help="the node's CXI devices for --nic cxi_service (default cxi0,cxi1,cxi2,cxi3)",
    )
    parser.add_argument(
        "--sim-cxi-busy",
        metavar="UID",
        action="append",
        default=[],
        help="with --nic simulated: the jobs of UID leave processes behind on their nodes, "
        "which keep the jobs' CXI services busy until an admin ends them (repeatable)",
    )
    parser.add_argument(
        "--sim-slow-mounts",
        metavar="RATE=SECONDS",
        default=None,
        help="with --backend simulated: the mounts of this share of Workflows, drawn at "
        "random, take SECONDS (the chaos harness; e.g. 0.05=8)",
    )
    parser.add_argument(
        "--sim-fault-seed",
        type=kinds.count(),
        default=1,
        metavar="N",
        help="seed of --sim-slow-mounts",
    )
    parser.add_argument(
        "--sim-clientmountd-apart",
        action="store_true",
        help="with --backend simulated: the simulated clientmount daemon runs in its own "
        "process (coral2-pipeline sim clientmountd), as nnf-clientmountd runs beside the "
        "worker; the worker only starts and stops its service",
    )
    parser.add_argument(
        "--state-dir",
        type=kinds.DIR,
        metavar="DIR",
        default=None,
        help="where the worker notes the jobs whose epilog ran, so that a late copy of "
        "their prolog undoes nothing (default /var/lib/coral2-pipeline/node-worker; "
        "with --backend simulated, <sim-root>/.state)",
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
    if args.backend != "simulated":
        given = [f for f in ("sim_root", "sim_slow_mounts") if getattr(args, f)]
        if given:  # an option that would be silently ignored is refused
            flag = "--" + given[0].replace("_", "-")
            raise CommandError(f"{flag} is for --backend simulated only")
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
    try:
        root = Path(args.sim_root or "/tmp/coral2-mounts")
        if args.backend == "simulated":
            root = writable_directory(root, "--sim-root")
        default_state = root / ".state" if args.backend == "simulated" else STATE_DIR
        state = Path(args.state_dir) if args.state_dir else default_state
        if args.state_dir:
            state = writable_directory(state, "--state-dir", mode=0o700)
        nic_of = _nics(args, state / "nics")
        ended = EndedJobs(state)
        if args.backend == "simulated" and args.sim_clientmountd_apart:
            from pipeline.sim.node.service import SimulatedService

            service = SimulatedService(state_file=clientmountd_state(root))
            worker = NodeWorker(settings, hosts, service, nic_of=nic_of, ended=ended)
        elif args.backend == "simulated":
            from pipeline.sim.node.agent import SimulatedAgent, agent_client

            slow = _slow_mounts(args.sim_slow_mounts, args.sim_fault_seed)
            agent = SimulatedAgent(agent_client(settings), hosts, root, slow)
            worker = NodeWorker(
                settings, hosts, agent.service, companion=agent, nic_of=nic_of, ended=ended
            )
        else:
            worker = NodeWorker(settings, hosts, SystemdService(), nic_of=nic_of, ended=ended)
    except ValueError as exc:
        raise CommandError(str(exc)) from exc
    concurrency = args.concurrency or min(256, 4 * len(hosts))
    worker.run(concurrency, loglevel)
    return 0


def _nics(args: argparse.Namespace, state: Path) -> Callable[[str], Nic] | None:
    """host → its NIC backend, as ``--nic`` asks (a simulated NIC keeps its services in
    ``state/<host>.json``, as hardware keeps them across a restart of the worker)."""
    if args.nic == "none":
        return None
    if args.nic == "simulated":
        from pipeline.sim.node.cassini import SimulatedNic

        nics: dict[str, Nic] = {}
        busy = [_busy_uid(text) for text in args.sim_cxi_busy]

        def simulated(host: str) -> Nic:
            if host not in nics:  # task threads may race here: setdefault keeps the first
                nics.setdefault(host, SimulatedNic(busy_uids=busy, state=state / f"{host}.json"))
            return nics[host]

        return simulated
    from node_worker.cxi_cli import CxiServiceCli

    cli = CxiServiceCli([d.strip() for d in args.cxi_devices.split(",") if d.strip()])
    return lambda host: cli


def _slow_mounts(text: str | None, seed: int) -> SlowMounts | None:
    """``RATE=SECONDS`` of ``--sim-slow-mounts``."""
    from pipeline.sim.node.agent import SlowMounts

    if text is None:
        return None
    rate, _, seconds = text.partition("=")
    try:
        slow = SlowMounts(float(rate), float(seconds), seed)
    except ValueError:
        slow = SlowMounts(-1.0, -1.0)
    if not (0 <= slow.rate <= 1 and 0 <= slow.seconds < float("inf")):
        raise CommandError(f"--sim-slow-mounts {text!r}: expected RATE=SECONDS, e.g. 0.05=8")
    return slow


def _busy_uid(text: str) -> int:
    """``UID`` of ``--sim-cxi-busy``."""
    if not text.isdigit() or int(text) > 2**32 - 1:
        raise CommandError(f"--sim-cxi-busy {text!r}: expected a uid, e.g. 1002")
    return int(text)

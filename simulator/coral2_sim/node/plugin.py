"""The node worker's ``simulated`` plugin (``node-worker --backend simulated``, ``--nic
simulated``): the simulated clientmount daemon and Cassini NICs of the demo and the tests.

Registered under the ``coral2_pipeline.node_worker`` entry points by the
coral2-pipeline-sim distribution; the product's ``node-worker`` knows it only by that
name. Its options are its own (``--sim-*``), refused when the plugin is not chosen.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.cli import kinds
from pipeline.cli.common import CommandError
from pipeline.model.files import writable_directory

if TYPE_CHECKING:
    from coral2_sim.node.agent import SlowMounts
    from node_worker.app import Companion
    from node_worker.cxi import Nic
    from node_worker.service import ClientmountService
    from pipeline.settings import Settings

#: The plugin's name: ``--backend`` and ``--nic`` take it.
NAME = "simulated"
#: Where the simulated backend makes mount directories unless ``--sim-root`` says.
DEFAULT_ROOT = Path("/tmp/coral2-mounts")


def clientmountd_state(root: Path) -> Path:
    """The simulated clientmount service's flags under ``--sim-root``."""
    return root / ".state" / "clientmount-services.json"


def slow_mounts(text: str | None, seed: int) -> SlowMounts | None:
    """``RATE=SECONDS`` of ``--sim-slow-mounts``."""
    from coral2_sim.node.agent import SlowMounts

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


def busy_uid(text: str) -> int:
    """``UID`` of ``--sim-cxi-busy``."""
    if not text.isdigit() or int(text) > 2**32 - 1:
        raise CommandError(f"--sim-cxi-busy {text!r}: expected a uid, e.g. 1002")
    return int(text)


class SimulatedBackend:
    """The ``simulated`` node worker plugin."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The ``--sim-*`` options."""
        parser.add_argument(
            "--sim-root",
            type=kinds.DIR,
            metavar="DIR",
            default=None,
            help="with --backend simulated: where the simulated clientmount daemon makes "
            f"mount directories (default {DEFAULT_ROOT}); the state goes under its .state",
        )
        parser.add_argument(
            "--sim-cxi-busy",
            metavar="UID",
            action="append",
            default=[],
            help="with --nic simulated: the jobs of UID leave processes behind on their "
            "nodes, which keep the jobs' CXI services busy until an admin ends them "
            "(repeatable)",
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
            "process (coral2-pipeline sim clientmountd), as nnf-clientmountd runs beside "
            "the worker; the worker only starts and stops its service",
        )

    def check(self, args: argparse.Namespace) -> None:
        """An option of this plugin given when it is not chosen is refused, not ignored."""
        if args.backend != NAME:
            for flag in ("sim_root", "sim_slow_mounts", "sim_clientmountd_apart"):
                if getattr(args, flag):
                    name = "--" + flag.replace("_", "-")
                    raise CommandError(f"{name} is for --backend {NAME} only")
        if args.nic != NAME and args.sim_cxi_busy:
            raise CommandError(f"--sim-cxi-busy is for --nic {NAME} only")

    def _root(self, args: argparse.Namespace) -> Path:
        return writable_directory(Path(args.sim_root or DEFAULT_ROOT), "--sim-root")

    def state_dir(self, args: argparse.Namespace) -> Path:
        """``<sim-root>/.state``."""
        return self._root(args) / ".state"

    def service(
        self, args: argparse.Namespace, settings: Settings, hosts: list[str]
    ) -> tuple[ClientmountService, Companion | None]:
        """The simulated clientmount service, and its daemon beside the worker (unless
        ``--sim-clientmountd-apart`` runs it in a process of its own)."""
        root = self._root(args)
        if args.sim_clientmountd_apart:
            from coral2_sim.node.service import SimulatedService

            return SimulatedService(state_file=clientmountd_state(root)), None
        from coral2_sim.node.agent import SimulatedAgent, agent_client

        slow = slow_mounts(args.sim_slow_mounts, args.sim_fault_seed)
        agent = SimulatedAgent(agent_client(settings), hosts, root, slow)
        return agent.service, agent

    def nic(self, args: argparse.Namespace, state: Path) -> Callable[[str], Nic]:
        """A simulated Cassini NIC per host, its services kept in ``state/<host>.json``."""
        from coral2_sim.node.cassini import SimulatedNic

        nics: dict[str, Nic] = {}
        busy = [busy_uid(text) for text in args.sim_cxi_busy]

        def simulated(host: str) -> Nic:
            if host not in nics:  # task threads may race here: setdefault keeps the first
                nics.setdefault(host, SimulatedNic(busy_uids=busy, state=state / f"{host}.json"))
            return nics[host]

        return simulated


#: The entry point's object.
PLUGIN = SimulatedBackend()

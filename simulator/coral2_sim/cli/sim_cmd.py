"""``coral2-pipeline sim kube-api``: run the simulated Kubernetes API server standalone."""

from __future__ import annotations

import argparse
import contextlib
import csv
import signal
import ssl
import sys
import threading
from typing import Any

from coral2_sim.dws import admission as dws_admission
from coral2_sim.dws.controller import DwsController
from coral2_sim.dws.fixtures import install_cluster
from coral2_sim.dws.nnf_context import Faults, WorkflowFaults
from coral2_sim.heap import FrozenHeap
from coral2_sim.kube.api import KubeApiServer
from coral2_sim.kube.discovery import kubeconfig
from coral2_sim.kube.rbac import MASTERS, Authorizer, token_file_users
from pipeline.cli import kinds
from pipeline.cli.common import CommandError, load_mapping
from pipeline.model.files import (
    PEM_BYTES,
    load,
    read_bytes,
    read_text,
    writable_directory,
    writable_file,
)
from pipeline.model.hostlist import expand_hostlist
from pipeline.model.rabbitmap import RabbitMapping


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
    kube.add_argument(
        "--host",
        type=kinds.address,
        default="127.0.0.1",
        help="address to bind (default %(default)s)",
    )
    kube.add_argument(
        "--port", type=kinds.port(free=True), default=0, help="port (default: a free one)"
    )
    kube.add_argument(
        "--kubeconfig",
        type=kinds.OUT,
        metavar="FILE",
        help="write a kubeconfig for kubectl to FILE once the server listens",
    )
    kube.add_argument(
        "--token-auth-file",
        type=kinds.FILE,
        metavar="FILE",
        help="authenticate requests by bearer token, as kube-apiserver's flag of that name "
        '(CSV: token,user,uid,"group1,group2"); a request without a known token is refused '
        "401, a user in system:masters may do anything (default: anyone may)",
    )
    kube.add_argument(
        "--rbac",
        type=kinds.FILE,
        metavar="FILE",
        action="append",
        default=[],
        help="enforce the RBAC roles and bindings of this manifest (repeatable; needs "
        "--token-auth-file); --kubeconfig then names the file's first system:masters user",
    )
    kube.add_argument(
        "--tls-cert-file",
        type=kinds.FILE,
        metavar="FILE",
        help="serve HTTPS with this certificate (PEM), as kube-apiserver's flag of that name",
    )
    kube.add_argument(
        "--tls-private-key-file",
        type=kinds.FILE,
        metavar="FILE",
        help="the certificate's private key (PEM)",
    )
    kube.add_argument(
        "--with-dws",
        action="store_true",
        help="add the DWS webhooks, the simulated DWS controller and the mapping's Storages",
    )
    kube.add_argument(
        "--mapping",
        type=kinds.FILE,
        metavar="FILE",
        help="rabbitmapping for --with-dws (default: the bundled 64-compute sample)",
    )
    kube.add_argument(
        "--latency",
        type=kinds.seconds(zero=True, most=60),
        default=0.005,
        metavar="SECONDS",
        help="how long the simulated DWS takes per state and directive (default %(default)s)",
    )
    kube.add_argument(
        "--no-mount-agent",
        action="store_true",
        help="leave ClientMounts to node workers (default: the controller mounts them itself)",
    )
    kube.add_argument(
        "--mount-timeout",
        type=kinds.seconds(most=86_400),
        default=30.0,
        metavar="SECONDS",
        help="how long a ClientMount may take before the Workflow gets nnf's 'unable to "
        "mount file system on client nodes' (default %(default)s)",
    )
    kube.add_argument(
        "--reconcilers",
        type=kinds.count(least=1, most=256),
        default=4,
        metavar="N",
        help="Workflows the simulated DWS reconciles at once (default %(default)s)",
    )
    kube.add_argument(
        "--api-fault-rate",
        type=kinds.fraction(),
        default=0.0,
        metavar="P",
        help="answer this share of HTTP requests with a fault before serving them: 500/503, "
        "409 for a PATCH or PUT, 410 or a broken stream for a watch (default: none)",
    )
    kube.add_argument(
        "--workflow-fault-rate",
        type=kinds.fraction(),
        default=0.0,
        metavar="P",
        help="with --with-dws, strike this share of Workflows in one state: a "
        "TransientCondition that clears, or an Error that stays (default: none)",
    )
    kube.add_argument(
        "--slow-rabbits",
        default="",
        metavar="HOSTLIST",
        help="with --with-dws, rabbits whose storage never comes up in Setup: their Servers "
        "entries stay not ready, and a PreRun after a Setup forced ready without them is "
        "nnf's Major error (default: none)",
    )
    kube.add_argument(
        "--no-systemstatus",
        action="store_true",
        help="with --with-dws, make no SystemStatus default, as a site whose install did "
        "not (neither dws nor nnf-sos creates it)",
    )
    kube.add_argument(
        "--fail-copies",
        action="append",
        default=[],
        metavar="PATH",
        help="with --with-dws, a path prefix whose copies the simulated nnf-dm fails (a "
        "Failed NnfDataMovement, nnf's Fatal error in DataIn, DataOut or PostRun); repeat "
        "for more (default: none)",
    )
    kube.add_argument(
        "--fault-seed",
        type=kinds.count(),
        default=1,
        metavar="N",
        help="seed of the faults at random",
    )
    kube.set_defaults(func=run_kube_api)
    mountd = sims.add_parser(
        "clientmountd",
        help="the simulated nnf-clientmount daemon of a hostlist of nodes",
        description=(
            "Bring the ClientMounts of each node whose clientmount service runs to their "
            "desired state, as nnf-clientmountd does: beside a node worker started with "
            "--backend simulated --sim-clientmountd-apart and the same --sim-root, whose "
            "service flags it follows. It outlives the node worker's restarts."
        ),
    )
    mountd.add_argument("--hostname", required=True, help="the nodes, a hostlist")
    mountd.add_argument(
        "--sim-root", type=kinds.DIR, required=True, metavar="DIR", help="the mounts' root"
    )
    mountd.add_argument(
        "--sim-slow-mounts", metavar="RATE=SECONDS", default=None, help="as node-worker's"
    )
    mountd.add_argument("--sim-fault-seed", type=kinds.count(), default=1, metavar="N")
    mountd.set_defaults(func=run_clientmountd)
    emulator = sims.add_parser(
        "node-emulator",
        help="many compute nodes' node workers in one light process (fan-out benchmarks)",
        description=(
            "Serve each node's queue with one pipelined RPOP per queue a sweep (not one "
            "BRPOP naming every queue), running each message through the node worker's own "
            "tasks, signature checks and signed answers, on simulated Cassini NICs."
        ),
    )
    emulator.add_argument("--hostname", required=True, help="the nodes, a hostlist")
    emulator.add_argument(
        "--state-dir",
        type=kinds.DIR,
        required=True,
        metavar="DIR",
        help="the simulated NICs' and jobs' state",
    )
    emulator.add_argument(
        "--hold",
        type=kinds.count(most=1_000_000),
        default=0,
        metavar="N",
        help="wait for N messages in the nodes' queues, do the nodes' work, then hand all "
        "the answers over at once (times the pipeline's sending and counting apart)",
    )
    emulator.add_argument(
        "--times",
        type=kinds.OUT,
        metavar="FILE",
        default=None,
        help="with --hold: write when each step ended",
    )
    emulator.set_defaults(func=run_node_emulator)


def _slow_rabbits(args: argparse.Namespace, mapping: RabbitMapping) -> list[str]:
    """``--slow-rabbits``, each a rabbit of the mapping."""
    if not args.slow_rabbits:
        return []
    try:
        rabbits = expand_hostlist(args.slow_rabbits)
    except ValueError as exc:
        raise CommandError(f"--slow-rabbits: {exc}") from None
    unknown = [r for r in rabbits if not mapping.is_rabbit(r)]
    if unknown:
        raise CommandError(f"--slow-rabbits: {', '.join(unknown)} is not a rabbit of the mapping")
    return rabbits


def _start_dws(
    server: KubeApiServer, args: argparse.Namespace, mapping: RabbitMapping, slow_rabbits: list[str]
) -> DwsController:
    from coral2_sim.kube.local import local_dws_client

    dws_admission.install(server.store)
    dws = local_dws_client(server)  # the controller lives here: no HTTP to itself
    install_cluster(dws, mapping, systemstatus=not args.no_systemstatus)
    return DwsController(
        dws,
        latency_s=args.latency,
        mount_agent=not args.no_mount_agent,
        reconcilers=args.reconcilers,
        mount_timeout_s=args.mount_timeout,
        faults=Faults(
            at_random=WorkflowFaults(args.workflow_fault_rate, args.fault_seed)
            if args.workflow_fault_rate
            else None,
            slow_rabbits=set(slow_rabbits),
            failed_copies=set(args.fail_copies),
        ),
    ).start()


def run_clientmountd(args: argparse.Namespace) -> int:
    """Reconcile until SIGINT/SIGTERM."""
    from coral2_sim.node.agent import SimulatedAgent, agent_client
    from coral2_sim.node.plugin import slow_mounts
    from pipeline.cli.common import settings_of
    from pipeline.model.hostlist import expand_hostnames

    try:
        hosts = expand_hostnames(args.hostname)  # names checked: they make directories
    except ValueError as exc:
        raise CommandError(f"--hostname: {exc}") from exc
    slow = slow_mounts(args.sim_slow_mounts, args.sim_fault_seed)
    root = writable_directory(args.sim_root, "--sim-root")
    agent = SimulatedAgent(agent_client(settings_of(args)), hosts, root, slow)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    agent.start(apart=True)
    print(f"clientmountd serving {len(hosts)} nodes", flush=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        agent.stop()
    return 0


def run_node_emulator(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM."""
    from coral2_sim.node.emulator import NodeEmulator
    from pipeline.cli.common import settings_of
    from pipeline.model.hostlist import expand_hostnames

    try:
        hosts = expand_hostnames(args.hostname)
    except ValueError as exc:
        raise CommandError(f"--hostname: {exc}") from exc
    times = writable_file(args.times, "--times") if args.times else None
    state = writable_directory(args.state_dir, "--state-dir")
    emulator = NodeEmulator(settings_of(args), hosts, state, hold=args.hold, times=times)
    signal.signal(signal.SIGTERM, lambda *_: emulator.stop())
    print(f"node emulator serving {len(hosts)} nodes", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        emulator.serve()
    return 0


def _authorizer(args: argparse.Namespace) -> Authorizer | None:
    if args.rbac and not args.token_auth_file:
        raise CommandError("--rbac needs --token-auth-file: RBAC authorizes users a token names")
    if not args.token_auth_file:
        return None
    tokens = read_text(args.token_auth_file, "--token-auth-file", 16 * 1024 * 1024)
    manifests = [load(path, "--rbac", "yaml") for path in args.rbac]
    try:
        return Authorizer(
            token_file_users(tokens), [d for docs in manifests for d in docs if isinstance(d, dict)]
        )
    except (ValueError, csv.Error, KeyError, TypeError) as exc:
        raise CommandError(f"cannot use --token-auth-file or --rbac: {exc}") from exc


def _tls(args: argparse.Namespace) -> ssl.SSLContext | None:
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        raise CommandError("--tls-cert-file and --tls-private-key-file go together")
    if not args.tls_cert_file:
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(args.tls_cert_file, args.tls_private_key_file)
    except (OSError, ssl.SSLError) as exc:
        raise CommandError(f"cannot use --tls-cert-file/--tls-private-key-file: {exc}") from exc
    return context


def _admin_token(authorizer: Authorizer | None) -> str | None:
    if authorizer is None:
        return None
    return next((t for t, u in authorizer.tokens.items() if MASTERS in u.groups), None)


def run_kube_api(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM."""
    if args.mapping and not args.with_dws:  # it would be silently ignored
        raise CommandError("--mapping is for --with-dws only")
    authorizer = _authorizer(args)
    tls = _tls(args)
    # every file read and checked before the server starts: a refusal stops nothing
    mapping = None
    slow_rabbits: list[str] = []
    if args.with_dws:
        from coral2_sim.demo.model import sample_path

        mapping = load_mapping(args.mapping or str(sample_path("sample-rabbitmapping.json")))
        slow_rabbits = _slow_rabbits(args, mapping)
    elif args.slow_rabbits:
        raise CommandError("--slow-rabbits is for --with-dws only")
    elif args.fail_copies or args.no_systemstatus:
        raise CommandError("--fail-copies and --no-systemstatus are for --with-dws only")
    for path in args.fail_copies:
        if not path.startswith("/"):
            raise CommandError(f"--fail-copies {path!r}: give an absolute path prefix")
    out = writable_file(args.kubeconfig, "--kubeconfig") if args.kubeconfig else None
    ca = (
        read_bytes(args.tls_cert_file, "--tls-cert-file", PEM_BYTES) if args.tls_cert_file else None
    )
    try:
        server = KubeApiServer(args.host, args.port, authorizer=authorizer, tls=tls).start()
    except OSError as exc:
        raise CommandError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from exc
    if args.api_fault_rate:
        server.faults_at_random(args.api_fault_rate, args.fault_seed)
    controller = None
    if mapping is not None:
        controller = _start_dws(server, args, mapping, slow_rabbits)
        server.serve_faults(controller.faults)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # before the URL: callers may stop us
    if out is not None:
        try:
            out.write_text(kubeconfig(server.url, token=_admin_token(authorizer), ca_pem=ca))
        except OSError as exc:
            server.stop()
            raise CommandError(
                f"cannot write --kubeconfig {args.kubeconfig}: {exc.strerror}"
            ) from exc
    heap = FrozenHeap().start()  # the simulated cluster: out of CPython's full collections
    print(server.url, flush=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        heap.stop()
        if controller is not None:
            controller.stop()
        server.stop()
    print("kube-api stopped", file=sys.stderr)
    return 0

"""``coral2-pipeline slingshot pool|env|clean``: the VNI pool and the nodes' CXI services,
as ``flux jobtap query cray-slingshot.so`` and ``flux slingshot`` show and sweep them.

``env`` and ``clean`` ask the node's worker (``node.cxi_list``,
``node.cxi_clean`` on its queue), which is the only thing that touches its
NICs; they wait ``--timeout`` seconds for its answer.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import TYPE_CHECKING, Any

from pipeline.cli import kinds
from pipeline.cli.common import CommandError, settings_of
from pipeline.errors import InputError, StoreUnavailable
from pipeline.model.jobid import decode_jobid, encode_f58
from pipeline.model.slingshot import job_environment, reservation_event
from pipeline.platform.routing import node_queue

if TYPE_CHECKING:
    from pipeline.settings import Settings
    from pipeline.store import Store


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "slingshot",
        help="the VNI pool and the nodes' CXI services (pool, env, clean)",
        description="Show the VNI pool, a job's Slingshot environment on a node, or sweep "
        "a node's leftover CXI services.",
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    pool = verbs.add_parser("pool", help="the VNI pool, its reservations and its quarantine")
    pool.add_argument("--json", action="store_true", help="print JSON")
    pool.set_defaults(func=run_pool)
    env = verbs.add_parser("env", help="a job's SLINGSHOT_* environment on one node")
    env.add_argument("-j", "--jobid", required=True, help="the job (decimal or F58)")
    env.add_argument("-n", "--node", required=True, help="the node")
    env.add_argument(
        "--timeout", type=kinds.seconds(most=86_400), default=10.0, help="seconds to wait (10)"
    )
    env.set_defaults(func=run_env)
    clean = verbs.add_parser(
        "clean", help="destroy a node's services for VNIs of the pool; free its quarantine"
    )
    clean.add_argument("node", help="the node to sweep")
    clean.add_argument(
        "--timeout", type=kinds.seconds(most=86_400), default=60.0, help="seconds to wait (60)"
    )
    clean.set_defaults(func=run_clean)


def _store(args: argparse.Namespace) -> Any:
    from pipeline.store import Store

    settings = settings_of(args)
    return Store.from_url(settings.store_url, settings.pipeline.key_prefix)


def run_pool(args: argparse.Namespace) -> int:
    """Print the pool."""
    print_pool(settings_of(args), _store(args), as_json=args.json)
    return 0


def print_pool(settings: Settings, store: Store, *, as_json: bool) -> None:
    """Print the pool of ``store``: as ``flux jobtap query cray-slingshot.so`` shows it
    (``as_json``), or as lines."""
    state = store.vnipool.query()
    plugin = settings.cray_slingshot
    out = {
        "vnis-per-job": plugin.vnis_per_job,
        "vni-reserve-fatal": plugin.vni_reserve_fatal,
        "vnipool": state,
    }
    if as_json:
        print(json.dumps(out, sort_keys=True))
        return
    print(f"universe    {state['universe'] or '-'}")
    print(f"free        {state['free'] or '-'}")
    print(f"vnis-per-job {plugin.vnis_per_job}, vni-reserve-fatal {plugin.vni_reserve_fatal}")
    for f58, vnis in sorted(state["jobs"].items()):
        print(f"job {f58}: {','.join(map(str, vnis))}")
    for f58, held in sorted(state["quarantine"].items()):
        vnis = ",".join(map(str, held["vnis"]))
        print(f"quarantine {f58}: {vnis} until clean on {held['waiting'] or '-'}")


def _app(args: argparse.Namespace) -> Any:
    from pipeline.platform.app import create_app

    return create_app(settings_of(args), set_current=False)


def _ask(args: argparse.Namespace, name: str, node: str, **kwargs: Any) -> Any:
    from celery.exceptions import TimeoutError as NoAnswer

    from pipeline.platform.node_results import ask

    try:
        queue = node_queue(node)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    app = _app(args)
    prefix = settings_of(args).pipeline.queues.node_prefix
    try:
        result = ask(app, name, node, prefix + node, kwargs={"hostname": node, **kwargs})
    except Exception as exc:  # kombu's and Celery's result store's ways of saying Redis failed
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise StoreUnavailable(f"cannot send {name} to {node}: Redis: {why}") from None
    store = _store(args)
    deadline = time.monotonic() + args.timeout
    while True:
        try:
            return result.get(timeout=min(POLL_S, max(deadline - time.monotonic(), 0.01)))
        except NoAnswer:
            # a node worker that refuses the message (unsigned, signed by a key it does not
            # trust) sets it aside as a dead letter naming its id: say so at once
            refused = _refused(store, str(result.id))
            if refused is not None:
                raise CommandError(f"the node worker of {node} refused it: {refused}") from None
            if time.monotonic() >= deadline:
                raise CommandError(
                    f"no answer from the node worker of {node} ({queue}) in {args.timeout:g} s"
                ) from None
        except Exception as exc:  # the node's own error, e.g. no CXI devices driven
            raise CommandError(f"{node}: {exc}") from None


#: How often a wait for a node's answer looks for its refusal among the dead letters (s).
POLL_S = 0.5


def _refused(store: Any, task_id: str) -> str | None:
    """Why the dead letter of task ``task_id`` was set aside, if one was."""
    for letter in store.dead_letters.latest(50):
        if task_id in letter.raw:
            hint = ""
            if "sign" in letter.reason:
                hint = " (node workers run only what the management key signs: run it with "
                hint += "the settings of a service that holds the key, e.g. worker.toml)"
            return f"{letter.reason}{hint}"
    return None


def run_env(args: argparse.Namespace) -> int:
    """Print the job's environment on the node, one VAR=value a line."""
    try:
        jobid = decode_jobid(args.jobid)
    except InputError:
        raise CommandError(f"error parsing jobid {args.jobid!r}") from None
    record = _store(args).jobs.get(jobid)
    state = None if record is None else record.slingshot
    if state is None:
        raise CommandError(f"no reservation found for {encode_f58(jobid)}")
    reservation = reservation_event(state.vnis, state.reason)
    devices = _ask(args, "node.cxi_list", args.node)
    for name, value in job_environment(
        inherited={}, reservation=reservation, devices=devices
    ).items():
        print(f"{name}={value}")
    return 0


def run_clean(args: argparse.Namespace) -> int:
    """Sweep the node and confirm it clean to the pool's quarantine."""
    settings = settings_of(args)
    store = _store(args)
    # Redis answers first, within the store's socket timeout (exit 4 if not): the message
    # to the node goes through kombu, whose publish retries a silent server far longer
    store.vnipool.query()
    answer = _ask(args, "node.cxi_clean", args.node, pool=settings.cray_slingshot.vni_pool)
    for name in answer["destroyed"]:
        print(f"{args.node}: {name} destroyed")
    if answer["busy"]:
        raise CommandError(f"{args.node}: still busy: {'; '.join(answer['busy'])}")
    from pipeline.platform.sending import dispatch

    freed = []
    app = _app(args)
    for f58, held in store.vnipool.query()["quarantine"].items():
        if args.node in set(_hosts(held["waiting"])):
            jobid = decode_jobid(f58)
            store.vnipool.confirm_destroyed(jobid, args.node)
            # the job's record learns it too (a job tracked for its nodes alone ends then)
            dispatch(app, store, "job.node_swept", {"jobid": jobid, "node": args.node})
            freed.append(f58)
    if freed:
        print(f"{args.node}: confirmed clean for {', '.join(sorted(freed))}")
    if not answer["destroyed"] and not freed:
        print(f"{args.node}: clean, no CXI service of the pool's VNIs, no quarantine waiting on it")
    return 0


def _hosts(hostlist: str) -> list[str]:
    from pipeline.model.hostlist import expand_hostlist

    return expand_hostlist(hostlist) if hostlist else []

"""``coral2-pipeline``: the command line. Each subcommand lives in its own module.

Errors on bad input are one clear line on stderr and a non-zero exit, never
a traceback: every command raises :class:`~pipeline.errors.PipelineError`
(or :class:`CommandError`) for what it refuses, and :func:`main` prints it.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from pipeline import __version__
from pipeline.cli import kinds
from pipeline.cli.common import CommandError, UsageError
from pipeline.cli.kinds import Parser
from pipeline.errors import ConfigError, PipelineError, StoreRefused, StoreUnavailable, Unavailable

#: Each subcommand: its module, its name and its one-line help. A
#: command loads only its own module (a prolog Flux runs once per job starts fast). A
#: compute node installs the package without the management extra
#: (``coral2-pipeline[node]``): a module that needs a package only the management side
#: has (the Kubernetes client, Flower, httpx, prometheus-client) registers its
#: subcommands as a refusal that names the extra.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("dws2jgf_cmd", "dws2jgf", "print the JGF (chassis/ssd graph) of R and a rabbitmapping"),
    ("getrabbit_cmd", "getrabbit", "look up the rabbits of computes, or the computes of rabbits"),
    (
        "rabbitmapping_cmd",
        "rabbitmapping",
        "print the rabbitmapping JSON built from DWS (flux rabbitmapping)",
    ),
    (
        "status_cmd",
        "status",
        "show where the pipeline, or one job, stands (read-only, from the job store)",
    ),
    ("job_cmd", "job", "show one job's timeline and where it stands"),
    (
        "exporter_cmd",
        "exporter",
        "serve Prometheus metrics of the pipeline at /metrics (read-only)",
    ),
    (
        "flower_cmd",
        "flower",
        "run Flower, the Celery monitor, behind authentication and with no key",
    ),
    (
        "deadletters_cmd",
        "deadletters",
        "list (or clear) the messages set aside because nothing could use them",
    ),
    ("resource_cmd", "resource", "drained nodes, drain/undrain, the RFC 44 resource journal"),
    (
        "recover_cmd",
        "recover",
        "rebuild the pipeline's state from Flux and DWS (after Redis lost writes)",
    ),
    (
        "node_cert_cmd",
        "node-cert",
        "issue each node of a hostlist its own key and certificate from the site CA",
    ),
    (
        "redis_acl_cmd",
        "redis-acl",
        "print the Redis ACL file of the pipeline's users, one per role",
    ),
    ("slingshot_cmd", "slingshot", "the VNI pool and the nodes' CXI services (pool, env, clean)"),
    (
        "breakdown_cmd",
        "breakdown",
        "show how DirectiveBreakdowns rewrite a jobspec and fill Servers",
    ),
    (
        "hook_cmd",
        "hook",
        "send one dws.* request (what dws-jobtap sends), e.g. from a perilog script",
    ),
    ("watch_cmd", "watch", "watch Workflows and Storages and enqueue observe tasks"),
    ("celery_cmd", "worker", "run a Celery worker of the pipeline's tasks"),
    (
        "celery_cmd",
        "beat",
        "run beat, which sends the periodic tasks (one of its replicas at a time)",
    ),
    (
        "node_worker_cmd",
        "node-worker",
        "run the node worker (clientmount and CXI services) of this node",
    ),
    (
        "flux_bridge_cmd",
        "flux-bridge",
        "serve the dws.* service for dws-jobtap.so and deliver the outbox to Flux",
    ),
    (
        "flux_prolog_cmd",
        "flux-prolog",
        "job-manager prolog: wait until the pipeline releases the job",
    ),
)
#: The entry points of command plugins: each names a module with ``register(sub)`` (the
#: simulators' ``demo`` and ``sim``, from coral2-pipeline-sim). They are looked up only
#: for a command that is not the product's own, or for the whole help.
PLUGIN_GROUP = "coral2_pipeline.commands"
#: The commands the simulators' distribution adds, named when it is not installed.
SIMULATOR_COMMANDS = {
    "demo": "run the embedded demo on the bundled sample cluster",
    "sim": "run one of the embedded simulators standalone",
}
#: The packages of the ``management`` extra.
MANAGEMENT_PACKAGES = frozenset({"kubernetes", "httpx", "flower", "prometheus_client"})


def _register(sub: Any, module_name: str) -> None:
    try:
        module = importlib.import_module(f"pipeline.cli.{module_name}")
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing not in MANAGEMENT_PACKAGES:
            raise
        for _, command, _ in (c for c in COMMANDS if c[0] == module_name):
            stub = sub.add_parser(command, help=f"(needs the management extra: no {missing})")
            stub.set_defaults(func=functools.partial(_needs_management, missing))
        return
    module.register(sub)


def _plugins(sub: Any, command: str | None, every: bool) -> None:
    """Add the plugin commands: ``command``'s registered by its module, the others (for
    the whole help) too; a simulator command not installed is named with how to get it."""
    from importlib.metadata import entry_points

    found = {point.name: point for point in entry_points(group=PLUGIN_GROUP)}
    for name, point in sorted(found.items()):
        if every or command is None or name == command:
            point.load().register(sub)
    for name, text in SIMULATOR_COMMANDS.items():
        if name not in found:
            stub = sub.add_parser(name, help=f"{text} (needs coral2-pipeline-sim)")
            stub.set_defaults(func=functools.partial(_needs_simulators, name))


def _needs_simulators(command: str, args: argparse.Namespace) -> int:
    raise ConfigError(
        f"{command} is the simulators' command, which this install lacks: install "
        "coral2-pipeline-sim (the repository's simulator/ directory; make venv does)"
    )


def chosen(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (the first word past the global options), if any."""
    words = iter(argv)
    for word in words:
        if word == "--config":
            next(words, None)
        elif word == "--":
            return next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def _needs_management(missing: str, args: argparse.Namespace) -> int:
    raise ConfigError(
        f"this command needs {missing}, which this install lacks (a compute node's "
        "coral2-pipeline[node]): install coral2-pipeline[management] on the management side"
    )


#: Exit statuses (docs/operations.md): a unit restarts on 1 and 4, never on 2 or 3, as
#: flux-coral2's dws unit never restarts on its 2 and 3.
EXIT_FAILURE = 1  # the command failed (a refusal, a failure at run time)
EXIT_USAGE = 2  # bad usage: argparse's
EXIT_CONFIG = 3  # the settings, a key or a file they name cannot work
EXIT_UNREACHABLE = 4  # a one-shot command could not reach Redis or Kubernetes


def build_parser(command: str | None = None, *, every: bool = False) -> argparse.ArgumentParser:
    """Return the argument parser with ``command``'s module registered (``every``: every
    module); the other subcommands are named with their help, their modules not loaded."""
    parser = Parser(
        prog="coral2-pipeline",
        description=(
            "Job-lifecycle orchestrator for CORAL-2 systems: Rabbit storage through DWS, "
            "Slingshot isolation, hardware collectives and node health."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--config",
        type=kinds.FILE,
        metavar="FILE",
        help="TOML settings file (default: $CORAL2_PIPELINE_CONFIG, else built-in defaults)",
    )
    if command == "status":  # a Nagios plugin: its bad usage, the global options' too, is UNKNOWN
        parser.usage_exit = kinds.UNKNOWN_STATUS
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = {m for m, name, _ in COMMANDS if every or name == command}
    for module_name, name, text in COMMANDS:
        if module_name not in wanted:
            sub.add_parser(name, help=text, add_help=False)
        elif name == next(n for m, n, _ in COMMANDS if m == module_name):  # once a module
            _register(sub, module_name)
    if every or command not in {name for _, name, _ in COMMANDS}:
        _plugins(sub, command, every)
    return parser


def one_line(text: str) -> str:
    """``text`` on one printable line: characters that are not (a newline from the input,
    a terminal escape) are shown escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def exit_status(exc: Exception) -> int:
    """The exit status a command ends with on ``exc``."""
    if isinstance(exc, UsageError):
        return EXIT_USAGE
    if isinstance(exc, ConfigError | StoreRefused):  # the settings, or the ACL file
        return EXIT_CONFIG
    if isinstance(exc, StoreUnavailable | Unavailable):
        return EXIT_UNREACHABLE
    return EXIT_FAILURE


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; return its exit status."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(chosen(words))
    try:
        args = parser.parse_args(words)
    except SystemExit:  # --help, --version, or a usage error (on stderr): once written
        if _flushed("", 0):
            return 1
        raise
    except OSError as exc:  # the help could not be written
        if exc.errno not in OUTPUT_ERRNOS:
            raise
        return _output_failed("", exc)
    if not hasattr(args, "verbose"):  # a one-shot command: its error line says it all
        logging.getLogger("coral2_pipeline").setLevel(logging.ERROR)
    try:
        status: int = args.func(args)
    except (PipelineError, CommandError) as exc:
        # a configuration error lists each problem on a line of its own; anything else
        # is one line, whatever the input it quotes holds
        text = str(exc) if isinstance(exc, ConfigError) else one_line(str(exc))
        print(f"coral2-pipeline {args.command}: {text}", file=sys.stderr)
        return exit_status(exc)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:  # a path from the settings no reader took first
            name = str(exc.filename or "")
            shown = repr(name if len(name) <= 60 else name[:56] + "...")
            print(
                f"coral2-pipeline {args.command}: the path {shown} ({len(name):,} characters) "
                "is too long: File name too long; fix it in the settings or arguments",
                file=sys.stderr,
            )
            return EXIT_CONFIG
        if exc.errno not in OUTPUT_ERRNOS:
            raise
        return _output_failed(args.command, exc)
    except KeyboardInterrupt:
        print(f"coral2-pipeline {args.command}: interrupted", file=sys.stderr)
        return 130
    return _flushed(args.command, status)


#: The errors of writing a command's output: a closed pipe, a full disk, a device gone.
OUTPUT_ERRNOS = frozenset({errno.EPIPE, errno.ENOSPC, errno.EFBIG, errno.EIO, errno.EDQUOT})


def _flushed(command: str, status: int) -> int:
    """``status``, once the output is written; an output that could not be is one line
    and exit 1 (a help text lost to a full disk is no success)."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        if exc.errno not in OUTPUT_ERRNOS:
            raise
        return _output_failed(command, exc)
    return status


def _output_failed(command: str, exc: OSError) -> int:
    """Say in one line that the output could not be written; stdout is pointed at
    /dev/null, so that the interpreter's last flush raises nothing more."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    if exc.errno != errno.EPIPE:  # a reader that went away wants no message
        name = f"coral2-pipeline {command}".rstrip()
        print(f"{name}: cannot write its output: {exc.strerror or exc}", file=sys.stderr)
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

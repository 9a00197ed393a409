"""``coral2-pipeline``: the command line. Each subcommand lives in its own module.

Errors on bad input are one clear line on stderr and a non-zero exit, never
a traceback: every command raises :class:`~pipeline.errors.PipelineError`
(or :class:`CommandError`) for what it refuses, and :func:`main` prints it.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import sys
from collections.abc import Sequence
from typing import Any

from pipeline import __version__
from pipeline.cli.common import CommandError
from pipeline.errors import ConfigError, PipelineError, StoreUnavailable, Unavailable

#: Each command module, and the subcommands it registers. A compute node installs the
#: package without the management extra (``coral2-pipeline[node]``): a module that needs
#: a package only the management side has (the Kubernetes client, Flower, httpx,
#: prometheus-client) registers its subcommands as a refusal that names the extra.
COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("dws2jgf_cmd", ("dws2jgf",)),
    ("getrabbit_cmd", ("getrabbit",)),
    ("rabbitmapping_cmd", ("rabbitmapping",)),
    ("status_cmd", ("status",)),
    ("job_cmd", ("job",)),
    ("exporter_cmd", ("exporter",)),
    ("flower_cmd", ("flower",)),
    ("deadletters_cmd", ("deadletters",)),
    ("resource_cmd", ("resource",)),
    ("node_cert_cmd", ("node-cert",)),
    ("redis_acl_cmd", ("redis-acl",)),
    ("slingshot_cmd", ("slingshot",)),
    ("breakdown_cmd", ("breakdown",)),
    ("hook_cmd", ("hook",)),
    ("demo_cmd", ("demo",)),
    ("sim_cmd", ("sim",)),
    ("watch_cmd", ("watch",)),
    ("celery_cmd", ("worker", "beat")),
    ("node_worker_cmd", ("node-worker",)),
    ("flux_bridge_cmd", ("flux-bridge",)),
    ("flux_prolog_cmd", ("flux-prolog",)),
)
#: The packages of the ``management`` extra.
MANAGEMENT_PACKAGES = frozenset({"kubernetes", "httpx", "flower", "prometheus_client"})


def _register(sub: Any, module_name: str, commands: tuple[str, ...]) -> None:
    try:
        module = importlib.import_module(f"pipeline.cli.{module_name}")
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing not in MANAGEMENT_PACKAGES:
            raise
        for command in commands:
            stub = sub.add_parser(command, help=f"(needs the management extra: no {missing})")
            stub.set_defaults(func=functools.partial(_needs_management, missing))
        return
    module.register(sub)


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
EXIT_UNREACHABLE = 4  # Redis or Kubernetes could not be reached (at start, for services)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="coral2-pipeline",
        description=(
            "Job-lifecycle orchestrator for CORAL-2 systems: Rabbit storage through DWS, "
            "Slingshot isolation, hardware collectives and node health."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="TOML settings file (default: $CORAL2_PIPELINE_CONFIG, else built-in defaults)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name, commands in COMMANDS:
        _register(sub, module_name, commands)
    return parser


def one_line(text: str) -> str:
    """``text`` on one printable line: characters that are not (a newline from the input,
    a terminal escape) are shown escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def exit_status(exc: Exception) -> int:
    """The exit status a command ends with on ``exc``."""
    if isinstance(exc, ConfigError):
        return EXIT_CONFIG
    if isinstance(exc, StoreUnavailable | Unavailable):
        return EXIT_UNREACHABLE
    return EXIT_FAILURE


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; return its exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.func(args)
    except (PipelineError, CommandError) as exc:
        # a configuration error lists each problem on a line of its own; anything else
        # is one line, whatever the input it quotes holds
        text = str(exc) if isinstance(exc, ConfigError) else one_line(str(exc))
        print(f"coral2-pipeline {args.command}: {text}", file=sys.stderr)
        return exit_status(exc)
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt:
        print(f"coral2-pipeline {args.command}: interrupted", file=sys.stderr)
        return 130
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

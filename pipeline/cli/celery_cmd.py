"""``coral2-pipeline worker`` and ``coral2-pipeline beat``: the Celery processes of the
management side, started as the units start them.

Each checks its settings first (a configuration error exits 3, which the units do not
restart), then runs Celery's own worker or beat in this process on the pipeline's app:
``worker`` consumes the settings' three queues, ``beat`` keeps its schedule under the
unit's ``StateDirectory=`` (``$STATE_DIRECTORY``). Arguments after ``--`` go to Celery.
Under systemd both report ready and ping the watchdog
(:mod:`pipeline.platform.supervision`).
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
from typing import Any

from pipeline.cli import kinds
from pipeline.cli.common import UsageError, add_verbose, settings_of, setup_logging
from pipeline.errors import ConfigError

log = logging.getLogger("coral2_pipeline.worker")


def register(sub: Any) -> None:
    """Add the subcommands to ``sub``."""
    worker = sub.add_parser(
        "worker",
        help="run a Celery worker of the pipeline's tasks",
        description=(
            "Run a Celery worker on the lifecycle, timeouts and housekeeping queues of the "
            "settings. Arguments after -- go to 'celery worker' (e.g. -- --pool=threads "
            "--concurrency=4 -n lifecycle1@%h)."
        ),
    )
    add_verbose(worker)
    worker.add_argument("celery", nargs=argparse.REMAINDER, help="-- then celery worker options")
    worker.set_defaults(func=run_worker)
    beat = sub.add_parser(
        "beat",
        help="run beat, which sends the periodic tasks (one of its replicas at a time)",
        description=(
            "Run Celery beat with the pipeline's leader scheduler. Its schedule file goes "
            "in --schedule-dir (default: $STATE_DIRECTORY, which systemd's StateDirectory= "
            "sets). Arguments after -- go to 'celery beat'."
        ),
    )
    beat.add_argument(
        "--schedule-dir", type=kinds.DIR, metavar="DIR", help="where beat keeps its schedule"
    )
    add_verbose(beat)
    beat.add_argument("celery", nargs=argparse.REMAINDER, help="-- then celery beat options")
    beat.set_defaults(func=run_beat)


#: The most threads (or processes) ``-- --concurrency`` may ask of one worker: more are
#: a typo (the pipeline's tasks wait on Redis and the API server, not on the CPU).
MAX_CONCURRENCY = 1000


def passed_through(args: argparse.Namespace) -> list[str]:
    """The options after ``--``, each a printable string: a control character (a newline
    in ``--hostname``) would reach logs and node names unseen."""
    extra = list(args.celery)
    extra = extra[1:] if extra[:1] == ["--"] else extra
    for option in extra:
        if not option.isprintable():
            raise UsageError(f"the option {option!r} after -- holds a control character")
    return extra


def _check_concurrency(options: list[str]) -> None:
    """``--concurrency`` / ``-c`` within 1 to :data:`MAX_CONCURRENCY` (Celery takes any
    count and starts that many threads)."""
    for index, option in enumerate(options):
        name, eq, value = option.partition("=")
        if name in ("--concurrency", "-c"):
            text = value if eq else (options[index + 1] if index + 1 < len(options) else "")
        elif option.startswith("-c") and not option.startswith("--"):
            text = option[2:]
        else:
            continue
        if text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_CONCURRENCY:
            continue
        raise UsageError(
            f"--concurrency {text!r}: give a whole number of threads from 1 to {MAX_CONCURRENCY}"
        )


def start_celery(app: Any, argv: list[str]) -> None:
    """Run Celery's ``argv`` on ``app``; an option Celery's command line refuses is one
    line (exit 2), not click's traceback."""
    import click

    try:
        app.start(argv)
    except click.exceptions.ClickException as exc:
        raise UsageError(f"celery {argv[0]}: {exc.format_message()}") from None


#: The entry points of worker plugins: each a callable given the app as the worker starts
#: (the simulators' kill points, which a chaos run uses to kill a worker between two
#: actions). A production install has none.
PLUGIN_GROUP = "coral2_pipeline.worker"


def install_plugins(app: Any) -> None:
    """Give ``app`` to every installed worker plugin."""
    from importlib.metadata import entry_points

    for point in entry_points(group=PLUGIN_GROUP):
        point.load()(app)
        log.info("worker plugin %s (%s) installed", point.name, point.value)


def run_worker(args: argparse.Namespace) -> int:
    """Consume until SIGTERM."""
    extra = passed_through(args)
    _check_concurrency(extra)
    level = setup_logging(args.verbose)
    settings = settings_of(args)
    from pipeline.platform.app import create_app

    app = create_app(settings)
    install_plugins(app)
    queues = settings.pipeline.queues
    argv = ["worker", "-Q", f"{queues.lifecycle},{queues.timeouts},{queues.housekeeping}"]
    start_celery(app, [*argv, f"--loglevel={level}", *extra])
    return 0


def run_beat(args: argparse.Namespace) -> int:
    """Schedule until SIGTERM."""
    extra = passed_through(args)
    level = setup_logging(args.verbose)
    directory = args.schedule_dir or os.environ.get("STATE_DIRECTORY", "").split(":")[0]
    if not directory:
        raise ConfigError("beat needs --schedule-dir (or systemd's StateDirectory=)")
    path = Path(directory)
    if not path.is_dir() or not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(
            f"beat's schedule directory {directory} is missing or not writable by uid "
            f"{os.getuid()}: create it for this user (StateDirectory= does)"
        )
    settings = settings_of(args)
    from pipeline.platform.app import create_app

    app = create_app(settings)
    argv = ["beat", "-s", str(path / "beat-schedule"), f"--loglevel={level}"]
    start_celery(app, [*argv, *extra])
    return 0

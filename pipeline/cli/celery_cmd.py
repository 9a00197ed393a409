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
from pipeline.cli.common import add_verbose, settings_of, setup_logging
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
            "--concurrency=4 -n lifecycle1@%%h)."
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


def _extra(args: argparse.Namespace) -> list[str]:
    extra = list(args.celery)
    return extra[1:] if extra[:1] == ["--"] else extra


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
    level = setup_logging(args.verbose)
    settings = settings_of(args)
    from pipeline.platform.app import create_app

    app = create_app(settings)
    install_plugins(app)
    queues = settings.pipeline.queues
    argv = ["worker", "-Q", f"{queues.lifecycle},{queues.timeouts},{queues.housekeeping}"]
    app.worker_main([*argv, f"--loglevel={level}", *_extra(args)])
    return 0


def run_beat(args: argparse.Namespace) -> int:
    """Schedule until SIGTERM."""
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
    app.start([*argv, *_extra(args)])
    return 0

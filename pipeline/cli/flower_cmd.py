"""``coral2-pipeline flower``: Flower, the Celery monitor, with no private key.

Flower shows the workers and their tasks from the events the workers send (``[pipeline]
task_events = true`` on the workers). It runs with settings that hold no signing key —
the monitoring side's — and asks nothing of the workers: their remote control obeys only
messages signed with the management key, and a monitoring host must hold no key that
can make a worker act. So Flower's own ``enable_events`` is off, and its pages that
inspect or control workers answer nothing.

It refuses to start without authentication: ``FLOWER_BASIC_AUTH`` (``user:password``,
from an ``EnvironmentFile=`` of mode 0600, never the command line) or Flower's
``--auth`` with an OAuth provider after ``--``. Its Redis user is the ``flower`` role
(``coral2-pipeline redis-acl``): the monitoring role's reads, and the event channel.
"""

from __future__ import annotations

import argparse
import atexit
import os
import signal
from typing import Any, NoReturn

from pipeline.cli import kinds
from pipeline.cli.celery_cmd import passed_through, start_celery
from pipeline.cli.common import (
    CommandError,
    UsageError,
    add_verbose,
    settings_of,
    setup_logging,
)
from pipeline.errors import ConfigError
from pipeline.platform.systemd import notify, watchdog_interval


def register(sub: Any) -> None:
    """Add the subcommand to ``sub``."""
    parser = sub.add_parser(
        "flower",
        help="run Flower, the Celery monitor, behind authentication and with no key",
        description=(
            "Run Flower on the pipeline's broker from the workers' task events. Needs "
            "FLOWER_BASIC_AUTH=user:password in its environment (or -- --auth=... with "
            "an OAuth provider). Arguments after -- go to 'celery flower' (e.g. -- "
            "--address=127.0.0.1 --port=5555)."
        ),
    )
    add_verbose(parser)
    parser.add_argument("celery", nargs=argparse.REMAINDER, help="-- then celery flower options")
    parser.set_defaults(func=run)


def _check_port(options: list[str]) -> None:
    """Flower's ``--port`` taken the one way (Flower would wrap 99999 round to a port
    nobody asked for)."""
    for index, option in enumerate(options):
        name, eq, value = option.partition("=")
        if name != "--port":
            continue
        text = value if eq else (options[index + 1] if index + 1 < len(options) else "")
        try:
            kinds.port()(text)
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"--port: {exc}") from None


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM; exit 0 then."""
    level = setup_logging(args.verbose)
    extra = passed_through(args)
    _check_port(extra)
    if not os.environ.get("FLOWER_BASIC_AUTH") and not any(
        a.startswith(("--auth", "--basic-auth", "--basic_auth")) for a in extra
    ):
        raise ConfigError(
            "Flower would serve without authentication: set FLOWER_BASIC_AUTH=user:password "
            "in its environment (an EnvironmentFile= of mode 0600), or give -- --auth=... "
            "with an OAuth provider"
        )
    settings = settings_of(args)
    if settings.pipeline.security_key is not None:
        raise ConfigError(
            "Flower runs without a signing key: give it the monitoring side's settings "
            "(no pipeline.security_key); it reads events and sends the workers nothing"
        )
    from pipeline.platform.app import create_app

    app = create_app(settings)
    # kombu's own Redis transport: Flower's broker page knows it by its URL scheme, and
    # Flower consumes no task queue
    app.conf.broker_transport = None
    _worker_page()
    _supervised()
    start_flower(app, ["flower", "--enable_events=False", f"--logging={level.lower()}", *extra])
    _exit_without_joining()


def start_flower(app: Any, argv: list[str]) -> None:
    """Run Flower; an option its Tornado command line refuses (``--max_tasks=nan``), or a
    port it cannot listen on, is one line."""
    from tornado.options import Error as OptionError

    try:
        start_celery(app, argv)
    except OptionError as exc:
        raise UsageError(f"celery flower: {exc}") from None
    except ValueError as exc:  # Tornado parses a number option's value with int()/float()
        raise UsageError(f"celery flower: an option's value is not of its type: {exc}") from None
    except OSError as exc:
        raise CommandError(f"Flower cannot listen: {exc.strerror or exc}") from None


def _exit_without_joining() -> NoReturn:
    """Leave once Flower's loop has stopped: its exit functions run (Flower's own stop,
    which saves its state when ``--persistent``; logging's flush), but the interpreter does
    not wait for Flower's executor threads, which may sit in a broker call that a Redis
    under load takes long to answer — a SIGTERM is obeyed at once, not after them."""
    notify("STOPPING=1")
    atexit._run_exitfuncs()
    os._exit(0)


#: What a worker's page says: Flower here sends no control command a worker obeys.
WORKER_PAGE = (
    "<html><head><title>{name}</title></head><body><h2>{name}</h2><p>This Flower holds no "
    "signing key, so the workers refuse the control commands that would fill this page "
    "(stats, pool, queues, registered tasks). Their tasks are on the Tasks page, their "
    "queues on the Broker page; <code>coral2-pipeline status</code> shows which queues "
    "a worker serves, and <code>celery inspect</code> run with the management key "
    "shows the rest.</p><p><a href='../workers'>Workers</a></p></body></html>"
)


def _worker_page() -> None:
    """Serve each worker's page from what Flower knows, without asking the worker: Flower's
    own page inspects it (control commands the workers refuse, unsigned), which gave a 404
    and eight warnings a visit."""
    from flower import urls
    from flower.views import BaseHandler
    from tornado import web
    from tornado.escape import xhtml_escape

    class WorkerPage(BaseHandler):  # type: ignore[misc]
        @web.authenticated
        def get(self, name: str) -> None:
            self.write(WORKER_PAGE.format(name=xhtml_escape(name)))

    for index, handler in enumerate(urls.handlers):  # the list Flower's app was given
        if getattr(handler, "name", None) == "worker":
            urls.handlers[index] = web.url(r"/worker/(.+)", WorkerPage, name="worker")


def _supervised() -> None:
    """Under systemd: READY=1 once Flower's loop runs (it listens before), and WATCHDOG=1
    from that loop, so a loop that stops turning stops the pings."""
    from tornado import ioloop

    loop = ioloop.IOLoop.current()  # the loop Flower runs (its IOLoop.instance())

    def serving() -> None:
        # in place of Flower's handler (installed before its loop runs), which raises
        # SystemExit wherever the main thread happens to be
        signal.signal(signal.SIGTERM, lambda *_: loop.add_callback_from_signal(loop.stop))
        notify("READY=1", "STATUS=Flower serving")

    loop.add_callback(serving)
    interval = watchdog_interval()
    if interval is not None:

        def ping() -> None:
            notify("WATCHDOG=1")

        ioloop.PeriodicCallback(ping, interval * 1000).start()

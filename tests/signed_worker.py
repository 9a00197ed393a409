"""A management worker as production runs it, for the tests of who may command it: a real
redis-server with a user per role, and ``coral2-pipeline worker`` signing and verifying
with the management key, sending task events (``task_events``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from celery import Celery
from coral2_sim.children import die_with_parent
from coral2_sim.keys import Signer, demo_signers
from coral2_sim.redis_server import RedisServer

from pipeline.platform.acl import acl_file
from pipeline.platform.app import create_app
from pipeline.settings import load_settings


@dataclass
class SignedWorker:
    redis: RedisServer
    management: Signer  # the management side's key
    node: Signer  # the node workers' keys ({host}: compute01)
    process: subprocess.Popen[bytes]
    log: Path
    apps: list[Celery] = field(default_factory=list)  # the senders' apps made, to close

    def url_as(self, user: str) -> str:
        """The broker URL logged in as ``user`` (every role's password is ``<role>-pw``)."""
        return self.redis.url.replace("redis://", f"redis://{user}:{user}-pw@")

    def env(self, user: str = "management", signer: Signer | None = None) -> dict[str, str]:
        """The settings of a process logged in as ``user``, signing with ``signer``."""
        env = {"CORAL2_PIPELINE_PIPELINE__BROKER_URL": self.url_as(user)}
        return env | (signer.env() if signer is not None else {})

    def app(self, user: str = "management", signer: Signer | None = None) -> Celery:
        """A sender's app with those settings (closed with the worker)."""
        app = create_app(load_settings(env=self.env(user, signer)), set_current=False)
        self.apps.append(app)
        return app

    def close_apps(self) -> None:
        """Close what the senders' apps opened: broker connections, the result subscriber
        and the result client (Celery's ``close`` leaves them to the garbage collector)."""
        for app in self.apps:
            app.pool.force_close_all()
            consumer = getattr(app.backend, "result_consumer", None)
            if consumer is not None:
                consumer.stop()
            client = getattr(app.backend, "client", None)
            if client is not None:
                client.connection_pool.disconnect()
        self.apps.clear()


def spawn(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``coral2-pipeline ARGV`` with only ``env``'s settings."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CORAL2_", "FLOWER_"))}
    with log.open("ab") as out:
        return subprocess.Popen(
            die_with_parent([sys.executable, "-m", "pipeline.cli", *argv]),
            env=base | env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


@contextmanager
def signed_worker(work: Path) -> Iterator[SignedWorker]:
    """A redis-server and one signing worker under ``work``, taking tasks."""
    management, node = demo_signers(work / "keys")
    roles = {role: f"{role}-pw" for role in ("management", "flower", "monitoring")}
    (work / "users.acl").write_text(acl_file(load_settings(env={}), roles, admin="admin-pw"))
    with RedisServer(work, aclfile=work / "users.acl", login=("admin", "admin-pw")) as server:
        site = SignedWorker(server, management, node, None, work / "worker.log")  # type: ignore[arg-type]
        env = site.env("management", management) | {"CORAL2_PIPELINE_PIPELINE__TASK_EVENTS": "true"}
        site.process = spawn(
            ["worker", "--", "--pool=threads", "--concurrency=2", "-n", "w1@%h"], env, site.log
        )
        try:
            # up: taking tasks, and so listening for control commands (a broadcast before
            # its worker listens reaches nobody)
            ping = site.app("management", management).send_task("housekeeping.ping", args=["up"])
            assert ping.get(timeout=120) == "up"
            yield site
        finally:
            site.close_apps()
            site.process.terminate()
            site.process.wait(timeout=60)

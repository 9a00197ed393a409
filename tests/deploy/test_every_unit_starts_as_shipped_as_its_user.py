"""Every shipped unit starts as systemd would start it: its ExecStart, from the package
installed at the documented prefix with the system's Python, as its User= (a uid of its
own), reading its own 0600 settings and Redis password, in its StateDirectory=, with its
EnvironmentFile=; it tells
systemd it is ready, pings the watchdog, and stops cleanly on SIGTERM. A unit whose
settings its user cannot read exits 3, which the unit does not restart. (The bridge's
unit needs a Flux instance: the real-Flux tier runs its command.)"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from coral2_sim.demo.model import sample_path
from coral2_sim.kube.api import KubeApiServer
from coral2_sim.redis_server import RedisServer

from pipeline.platform.acl import acl_file, node_user
from pipeline.platform.pki import write_private
from pipeline.settings import load_settings
from tests.deploy.units import (
    PREFIX,
    REPO,
    NotifySocket,
    Unit,
    command,
    install,
    system_python,
    units,
)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="starting a unit as its User= needs root"),
    pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)"),
    pytest.mark.skipif(
        system_python() is None, reason="no Python 3.11+ outside /root and /home to install"
    ),
]

KEY_PREFIX = "units"
#: the unit users, each a uid of its own; the Redis role each speaks as
USERS = {
    "coral2-worker": 61001,
    "coral2-beat": 61002,
    "coral2-watch": 61003,
    "coral2-flower": 61004,
    "coral2-monitor": 61005,
    "root": 0,
}
ROLES = {
    "coral2-worker": "management",
    "coral2-beat": "management",
    "coral2-watch": "watcher",
    "coral2-flower": "flower",
    "coral2-monitor": "monitoring",
}
#: what each EnvironmentFile= holds (systemd reads it as root: mode 0600, root's)
ENVIRONMENT_FILES = {"flower.env": "FLOWER_BASIC_AUTH=admin:a-password\n"}
HOST = socket.gethostname()


@dataclass
class Site:
    root: Path
    etc: Path
    redis_url: str
    api_url: str

    def settings_file(self, name: str, user: str, *, owner: int | None = None) -> Path:
        """``<etc>/<name>`` for ``user``: its Redis user and password file, 0600, its own."""
        uid = USERS[user] if owner is None else owner
        role = ROLES.get(user, "node")
        username = node_user(HOST) if role == "node" else role
        password = self.etc / f"{Path(name).stem}.redis-password"
        password.write_text(PASSWORDS[role] + "\n")
        config = self.etc / name
        config.write_text(
            "[pipeline]\n"
            f'broker_url = "{self.redis_url}"\n'
            f'key_prefix = "{KEY_PREFIX}"\n'
            f'redis_username = "{username}"\n'
            f'redis_password_file = "{password}"\n'
            f'api_host = "{self.api_url}"\n'
            "[rabbit]\n"
            f'mapping = "{self.etc / "rabbitmapping.json"}"\n'
        )
        for path in (config, password):
            os.chown(path, uid, uid)
            os.chmod(path, 0o600)
        return config


PASSWORDS: dict[str, str] = {}


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    root = Path(tempfile.mkdtemp(prefix="coral2-units-"))
    root.chmod(0o755)
    etc = root / "etc" / "coral2-pipeline"
    etc.mkdir(parents=True)
    etc.chmod(0o755)
    (root / "var" / "lib").mkdir(parents=True)
    python = system_python()
    assert python is not None
    install(python, Path(f"{root}{PREFIX}"), REPO)
    shutil.copy(sample_path("sample-rabbitmapping.json"), etc / "rabbitmapping.json")
    (etc / "rabbitmapping.json").chmod(0o644)
    settings = load_settings(env={"CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": KEY_PREFIX})
    roles = ("management", "watcher", "flower", "monitoring")
    passwords = {role: secrets.token_urlsafe(16) for role in roles}
    node_password = secrets.token_urlsafe(16)
    admin = secrets.token_urlsafe(16)
    aclfile = root / "users.acl"
    aclfile.write_text(
        acl_file(settings, passwords, nodes={node_user(HOST): ([HOST], node_password)}, admin=admin)
    )
    (root / "redis").mkdir()
    redis = RedisServer(
        root / "redis", log=root / "redis.log", aclfile=aclfile, login=("admin", admin)
    ).start()
    with KubeApiServer() as kube:
        site = Site(root, etc, redis.url, kube.url)
        PASSWORDS.update(passwords, node=node_password)
        yield site
    redis.stop()
    shutil.rmtree(root, ignore_errors=True)


def start(unit: Unit, site: Site, notify: NotifySocket) -> subprocess.Popen[bytes]:
    user = unit.one("User")
    uid = USERS[user]
    argv = command(unit, site.root, HOST)
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    env.update(NOTIFY_SOCKET=str(notify.path), WATCHDOG_USEC="2000000")
    if environment := unit.one("EnvironmentFile"):  # read as systemd does, before dropping
        path = Path(f"{site.root}{environment}")
        write_private(path, ENVIRONMENT_FILES[path.name].encode())
        env.update(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    if state := unit.one("StateDirectory"):
        directory = site.root / "var" / "lib" / state
        directory.mkdir(parents=True, exist_ok=True)
        os.chown(directory, uid, uid)
        directory.chmod(int(unit.one("StateDirectoryMode", "0755"), 8))
        env["STATE_DIRECTORY"] = str(directory)
    if uid:
        argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]
    with (site.root / f"{unit.name}.log").open("wb") as log:
        return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd="/")


def exit_status(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    """The process's exit status, or None if it is still running after ``timeout``."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def config_name(unit: Unit) -> str:
    argv = unit.one("ExecStart").split()
    return Path(argv[argv.index("--config") + 1]).name


STARTABLE = [u for u in units() if "flux-bridge" not in u.name]


@pytest.mark.parametrize("unit", STARTABLE, ids=[u.name for u in STARTABLE])
def test_the_unit_comes_up_as_its_user_and_stops_on_sigterm(
    unit: Unit, site: Site, tmp_path: Path
) -> None:
    assert unit.one("Type") == "notify" and unit.one("WatchdogSec")
    site.settings_file(config_name(unit), unit.one("User"))
    notify = NotifySocket(site.root / f"notify-{unit.name}")
    proc = start(unit, site, notify)
    try:
        log = site.root / f"{unit.name}.log"
        assert notify.wait_for("READY=1", proc, 120), log.read_text()[-3000:]
        assert notify.wait_for("WATCHDOG=1", proc, 30), log.read_text()[-3000:]
        proc.send_signal(signal.SIGTERM)
        assert exit_status(proc, 120) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        notify.close()


def test_settings_its_user_cannot_read_exit_3_which_the_unit_does_not_restart(
    site: Site,
) -> None:
    [unit] = [u for u in units() if u.name == "coral2-pipeline-worker.service"]
    site.settings_file(config_name(unit), unit.one("User"), owner=0)  # root's, 0600
    notify = NotifySocket(site.root / "notify-unreadable")
    proc = start(unit, site, notify)
    try:
        assert proc.wait(timeout=120) == 3
        assert "3" in unit.one("RestartPreventExitStatus").split()
        assert not any("READY=1" in m for m in notify.received)
    finally:
        notify.close()

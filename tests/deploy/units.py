"""The shipped systemd units, read as systemd reads them, and a sandbox that runs a
unit's ``ExecStart`` as its ``User=`` with its files, the way systemd would start it:
the install prefix, ``/etc/coral2-pipeline`` and ``/var/lib`` moved under a directory of
the test's own, ``NOTIFY_SOCKET`` and ``WATCHDOG_USEC`` set, the process dropped to the
unit's user with ``setpriv``."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
UNITS = REPO / "deploy" / "systemd"
PREFIX = "/opt/coral2-pipeline"


@dataclass
class Unit:
    """One unit file's [Service] settings (a key given twice keeps every value)."""

    name: str
    service: dict[str, list[str]]

    def one(self, key: str, default: str = "") -> str:
        return self.service.get(key, [default])[-1]


def read_unit(path: Path) -> Unit:
    section = ""
    service: dict[str, list[str]] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        if section == "Service":
            service.setdefault(key, []).append(value)
    return Unit(path.name, service)


def units() -> list[Unit]:
    return [read_unit(p) for p in sorted(UNITS.glob("*.service"))]


class NotifySocket:
    """What systemd listens on for a ``Type=notify`` service."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        os.chmod(path, 0o777)  # the service's user sends to it, as to systemd's
        self.sock.settimeout(1.0)
        self.received: list[str] = []

    def wait_for(self, state: str, proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
        import time

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(state in message.split("\n") for message in self.received):
                return True
            if proc.poll() is not None:
                return False
            try:
                self.received.append(self.sock.recv(4096).decode())
            except TimeoutError:
                continue
        return False

    def close(self) -> None:
        self.sock.close()


def command(unit: Unit, root: Path, hostname: str) -> list[str]:
    """The unit's ExecStart with every path under ``root`` (the install prefix,
    ``/etc``, ``/var/lib``); ``%H`` this host, ``%i`` 1."""
    line = unit.one("ExecStart").replace("%H", hostname).replace("%i", "1")
    moved = ("/opt/", "/etc/", "/var/lib/")
    argv = []
    for word in shlex.split(line):
        top = next((t for t in moved if word.startswith(t)), None)
        argv.append(word if top is None else f"{root}{word}")
    return argv


def system_python() -> str | None:
    """A Python of 3.11 or later outside /root and /home (which ProtectHome= hides from a
    unit), to install at the prefix with, as deploy/README.md says; None: there is none."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if not Path(candidate).exists():
            continue
        done = subprocess.run(
            [candidate, "-c", "import sys, venv; print(sys.version_info >= (3, 11))"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.stdout.strip() == "True":
            return candidate
    return None


def install(python: str, prefix: Path, source: Path, extra: str = "management") -> None:
    """Install the package at ``prefix`` as a site would: a venv of ``python`` and
    ``pip install`` of the source tree with ``extra`` (``management``, or ``node`` on a
    compute node)."""
    subprocess.run([python, "-m", "venv", str(prefix)], check=True, capture_output=True)
    pip = [str(prefix / "bin" / "pip"), "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, f"{source}[{extra}]"], check=True, capture_output=True, timeout=900)


def reachable_by_others(path: Path) -> bool:
    """Whether a user other than the owner may reach ``path`` (each directory above it
    searchable by others)."""
    for parent in [path, *path.parents]:
        if parent.is_dir() and not os.stat(parent).st_mode & 0o001:
            return False
    return True

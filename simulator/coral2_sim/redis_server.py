"""A throw-away ``redis-server`` on a free loopback port (tests, demo, benchmarks)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import redis

from coral2_sim.children import die_with_parent
from pipeline.errors import ConfigError


def free_port() -> int:
    """Return a free loopback TCP port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """Start with :meth:`start` (or ``with``); ``url`` points at database 0. With ``aof``
    it keeps an append-only file (``appendfsync everysec``, as production runs it) in
    ``workdir``: stopped and started again, it has every write back. With ``aclfile``
    its users are those of the file (``pipeline.platform.acl``), and ``login`` one
    that may PING. Its memory is bounded (``maxmemory``) and nothing is ever evicted
    (``noeviction``): a write past the bound is refused with ``OOM``, as in production
    (``deploy/redis/coral2-pipeline.conf``)."""

    def __init__(
        self,
        workdir: Path | None = None,
        *,
        log: Path | None = None,
        aof: bool = False,
        aclfile: Path | None = None,
        appendfsync: str = "everysec",
        login: tuple[str, str] | None = None,
        maxmemory: str = "1gb",
        config: Path | None = None,
        nofile: int | None = None,
    ) -> None:
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="coral2-redis-"))
        self.log = log
        self.aof = aof
        self.appendfsync = appendfsync  # "always": a disk sync per write (deploy/redis)
        self.aclfile = aclfile
        self.login = login  # (user, password) that may PING, with an ACL file
        self.maxmemory = maxmemory  # as production runs it: bounded, and nothing evicted
        self.config = config  # a redis.conf to start from (the flags here override it)
        self.nofile = nofile  # its file-descriptor limit, as a unit's LimitNOFILE= sets it
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 20.0) -> RedisServer:
        """Start the server and wait until it answers PING."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise ConfigError(
                "redis-server is not installed; `make test` and `make demo` install it "
                "(apt-get install redis-server)"
            )
        argv = die_with_parent(
            [
                binary,
                *([str(self.config)] if self.config else []),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes" if self.aof else "no",
                "--appendfsync",
                self.appendfsync,
                "--dir",
                str(self.workdir),
                "--maxmemory",
                self.maxmemory,
                "--maxmemory-policy",
                "noeviction",
                *(["--aclfile", str(self.aclfile)] if self.aclfile else []),
            ]
        )
        if self.nofile is not None:  # util-linux's prlimit, as a unit's LimitNOFILE= does
            prlimit = shutil.which("prlimit") or "prlimit"
            argv = [prlimit, f"--nofile={self.nofile}:{self.nofile}", "--", *argv]
        if self.log is not None:
            with self.log.open("ab") as out:
                self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        else:
            self.process = subprocess.Popen(
                argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
        user, password = self.login or (None, None)
        client = redis.Redis.from_url(self.url, username=user, password=password)
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                try:
                    client.ping()
                    return self
                except redis.ConnectionError:
                    if time.monotonic() > deadline or self.process.poll() is not None:
                        self.stop()
                        where = f"; see {self.log}" if self.log else ""
                        raise ConfigError(
                            f"redis-server did not start on port {self.port}{where}"
                        ) from None
                    time.sleep(0.05)
        finally:
            client.close()

    def aof_refusals(self) -> list[str]:
        """The commands Redis refused to replay from its append-only file as it started
        (each is a write lost by a restart), as its log tells them."""
        if self.log is None or not self.log.exists():
            return []
        lines = self.log.read_text(errors="replace").splitlines()
        return [line for line in lines if "AOF-loading-client" in line]

    def run_id(self) -> str | None:
        """The server's ``run_id`` (new at every start), or None when it does not answer."""
        user, password = self.login or (None, None)
        client = redis.Redis.from_url(self.url, username=user, password=password)
        try:
            info: Any = client.info("server")
            return str(info.get("run_id"))
        except redis.RedisError:
            return None
        finally:
            client.close()

    def aof_mark(self) -> tuple[Path, int]:
        """The append-only file Redis appends to now, and its size: the point a crash of
        the host, its last writes not yet on disk, may cut the file back to."""
        files = sorted((self.workdir / "appendonlydir").glob("*.incr.aof"))
        newest = max(files, key=lambda f: (f.stat().st_mtime, f.name))
        return newest, newest.stat().st_size

    def crash_back_to(self, mark: tuple[Path, int]) -> int:
        """A crash of Redis's host: SIGKILL, and the append-only file cut back to ``mark``
        (:meth:`aof_mark`), as the writes the kernel had not synced are lost with the host
        (a SIGKILL of the process alone loses nothing the kernel was handed). Returns the
        bytes lost; start it again with :meth:`start`."""
        self.kill()
        path, size = mark
        lost = 0
        for later in (self.workdir / "appendonlydir").glob("*.incr.aof"):
            keep = size if later == path else 0 if later.name > path.name else None
            if keep is not None and later.stat().st_size > keep:
                lost += later.stat().st_size - keep
                with later.open("r+b") as aof:
                    aof.truncate(keep)
        return lost

    def kill(self) -> None:
        """SIGKILL the server: no shutdown, whatever the append-only file had not synced
        (up to a second, with ``appendfsync everysec``) is lost, as in a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        """Stop the server."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

"""The ACL file ``redis-acl --admin-password-file`` writes gives the operator a user
``admin`` that may administer the shipped Redis (``ACL LOAD``, ``CONFIG SET``,
``BGREWRITEAOF``, ``BGSAVE``), and no role's user may."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from coral2_sim.redis_server import RedisServer

from pipeline.platform.pki import write_private

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "deploy" / "redis" / "coral2-pipeline.conf"
ADMIN_COMMANDS = (
    ("ACL", "LOAD"),
    ("CONFIG", "SET", "maxmemory", "2gb"),
    ("BGREWRITEAOF",),
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    work = tmp_path_factory.mktemp("admin")
    for user in ("admin", "management", "monitoring"):
        write_private(work / f"{user}.pass", f"{user}-secret\n".encode())
    argv = [sys.executable, "-m", "pipeline.cli", "redis-acl"]
    argv += ["--admin-password-file", str(work / "admin.pass")]
    argv += ["--password-file", f"management={work / 'management.pass'}"]
    argv += ["--password-file", f"monitoring={work / 'monitoring.pass'}"]
    acl = subprocess.run(
        argv,
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("CORAL2_")},
    )
    assert acl.returncode == 0, acl.stderr
    (work / "users.acl").write_text(acl.stdout)
    login = ("admin", "admin-secret")
    with RedisServer(work, aclfile=work / "users.acl", login=login, config=CONF) as server:
        yield server


def as_user(server: RedisServer, user: str) -> redis.Redis:
    return redis.Redis(port=server.port, username=user, password=f"{user}-secret")


@pytest.mark.parametrize("command", ADMIN_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_the_admin_user_may_administer_redis(server: RedisServer, command: tuple[str]) -> None:
    admin = as_user(server, "admin")
    admin.execute_command(*command)  # raises NoPermissionError if refused


@pytest.mark.parametrize("user", ["management", "monitoring"])
@pytest.mark.parametrize("command", ADMIN_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_no_role_may_administer_redis(server: RedisServer, user: str, command: tuple[str]) -> None:
    with pytest.raises(redis.exceptions.NoPermissionError):
        as_user(server, user).execute_command(*command)


def test_the_default_user_cannot_log_in(server: RedisServer) -> None:
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis(port=server.port).ping()

"""``redis-acl --nodes`` and ``resource drain`` take node names through the one hostname
check ``node-cert`` uses: a glob character (which would widen a node's ACL key patterns),
a path (which would write a password file outside ``--node-passwords``) or a name no
host has is one line and a non-zero exit, and nothing is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ENV = {"PATH": "/usr/bin:/bin", "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "coral2"}


@pytest.mark.parametrize("nodes", ["comp?te05", "*", "../x", "n1,../../etc/x", "a b"])
def test_redis_acl_refuses_the_name_and_writes_no_file(tmp_path: Path, nodes: str) -> None:
    passwords = tmp_path / "passwords"
    passwords.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "redis-acl", "--nodes", nodes,
         "--node-passwords", str(passwords), "--make-missing"],
        capture_output=True, text=True, env=ENV, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "is not a hostname" in done.stderr or "hostlist" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stdout == ""
    assert list(tmp_path.rglob("*.pass")) == []


def test_a_drain_of_a_name_no_host_has_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "resource", "drain", "comp?te05", "why"],
        capture_output=True, text=True, env=ENV, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # a command error, as an empty TARGETS is
    assert "TARGETS:" in done.stderr and "is not a hostname" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr

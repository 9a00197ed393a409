"""A command that writes something for each node of a hostlist — ``node-cert``,
``redis-acl --nodes``, ``resource drain`` — given an empty one says so in one line and
exits non-zero, writing nothing: before, ``node-cert ''`` exited 0 having issued nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ENV = {"PATH": "/usr/bin:/bin", "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "coral2"}


def commands(tmp: Path) -> dict[str, list[str]]:
    (tmp / "ca.key").write_text("")
    (tmp / "ca.key").chmod(0o600)
    (tmp / "ca.crt").write_text("")
    (tmp / "passwords").mkdir()
    return {
        "node-cert": ["node-cert", "", "--out", str(tmp / "out"),
                      "--ca-key", str(tmp / "ca.key"), "--ca-cert", str(tmp / "ca.crt")],
        "redis-acl": ["redis-acl", "--nodes", "", "--node-passwords", str(tmp / "passwords"),
                      "--make-missing"],
        "resource drain": ["resource", "drain", "", "why"],
    }  # fmt: skip


@pytest.mark.parametrize("command", ["node-cert", "redis-acl", "resource drain"])
def test_an_empty_hostlist_is_one_line_and_nothing_written(tmp_path: Path, command: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", *commands(tmp_path)[command]],
        capture_output=True, text=True, env=ENV, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode != 0, done.stdout
    [line] = done.stderr.strip().splitlines()
    assert "no host given" in line, line
    assert not (tmp_path / "out").exists()
    assert list((tmp_path / "passwords").iterdir()) == []

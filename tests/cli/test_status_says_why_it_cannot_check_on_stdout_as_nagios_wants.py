"""``status`` is a Nagios plugin: whatever keeps it from checking — settings that cannot
work, a missing config file, bad usage, Redis unreachable — it says on stdout, where
NRPE reads a plugin's output (never "No output returned"), with UNKNOWN (3) or, for Redis
down, CRITICAL (2); and with ``--json`` as one JSON object, as its report is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def status(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, **(env or {})}
    environ.pop("CORAL2_PIPELINE_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", *argv],
        capture_output=True, text=True, env=environ, check=False, timeout=60,
    )  # fmt: skip


@pytest.fixture
def bad_config(tmp_path: Path) -> str:
    path = tmp_path / "bad.toml"
    path.write_text("[pipeline]\nnode_timeout = -5\n")
    return str(path)


def test_settings_that_cannot_work_are_unknown_on_stdout(bad_config: str) -> None:
    done = status("--config", bad_config, "status")
    assert done.returncode == 3
    assert done.stdout.startswith("UNKNOWN: configuration:") and "node_timeout" in done.stdout


def test_with_json_it_is_one_object(bad_config: str) -> None:
    done = status("--config", bad_config, "status", "--json")
    answer = json.loads(done.stdout)
    assert done.returncode == 3 and answer["status"] == "UNKNOWN"
    assert "node_timeout" in answer["flags"][0]


def test_a_missing_config_file_and_bad_usage_are_unknown_on_stdout() -> None:
    for argv in (("--config", "/nonexistent.toml", "status"), ("status", "--limit", "x")):
        done = status(*argv)
        assert done.returncode == 3, argv
        assert done.stdout.startswith("UNKNOWN: "), (argv, done.stdout, done.stderr)


def test_redis_unreachable_is_critical_in_json_too() -> None:
    env = {"CORAL2_PIPELINE_PIPELINE__BROKER_URL": "redis://127.0.0.1:1/0"}
    done = status("status", "--json", env=env)
    answer = json.loads(done.stdout)
    assert done.returncode == 2 and answer["status"] == "CRITICAL"
    assert answer["critical"] and "Redis at redis://127.0.0.1:1/0" in answer["critical"][0]

"""The shipped Prometheus alert rules load in Prometheus's own checker, and their unit
tests pass there: a job stuck in Proposal fires ``Coral2JobStuckInOneState`` once past
30 minutes (and a job waiting on Flux never does), Redis down fires a critical alert."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"


def promtool(*argv: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail("promtool is not installed: run `make test` (it installs it)")
    return subprocess.run(
        [binary, *argv], capture_output=True, text=True, cwd=RULES, check=False, timeout=120
    )


def test_the_rules_load() -> None:
    done = promtool("check", "rules", "coral2-pipeline.rules.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 15 rules found" in done.stdout


def test_the_rules_fire_as_their_tests_say() -> None:
    done = promtool("test", "rules", "coral2-pipeline.rules.test.yml")
    assert done.returncode == 0, done.stdout + done.stderr

"""The shipped Prometheus alert rules load in Prometheus's own checker, and their unit
tests pass there: a job stuck in Proposal fires ``Coral2JobStuckInOneState`` once past
30 minutes (and a job waiting on Flux never does), Redis down fires a critical alert, a
frozen beat and dead node workers each fire one critical alert alone. Every alert has a
test, and every critical one a test that it fires."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

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
    assert "SUCCESS: 16 rules found" in done.stdout


def test_the_rules_fire_as_their_tests_say() -> None:
    done = promtool("test", "rules", "coral2-pipeline.rules.test.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_has_a_test_that_fires_it() -> None:
    rules = yaml.safe_load((RULES / "coral2-pipeline.rules.yml").read_text())
    alerts = {r["alert"] for group in rules["groups"] for r in group["rules"] if "alert" in r}
    tests = yaml.safe_load((RULES / "coral2-pipeline.rules.test.yml").read_text())
    fired = {
        case["alertname"]
        for test in tests["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert alerts - fired == set()

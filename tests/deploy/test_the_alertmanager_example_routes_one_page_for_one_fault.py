"""The Alertmanager example deploy/ ships (``deploy/prometheus/alertmanager.yml``) loads in
Alertmanager's own checker, routes critical alerts to the on-call receiver and warnings to
tickets, and — in a real Alertmanager — an exporter that cannot read Redis silences every
other alert of its instance, and a critical alert its instance's warning: one page for one
fault."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.redis_server import free_port

CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "alertmanager.yml"


def tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(f"prometheus-{name}")
    if found is None:
        pytest.fail(f"{name} is not installed: run `make test` (it installs it)")
    return found


def test_the_example_loads_and_routes_by_severity() -> None:
    done = subprocess.run(
        [tool("amtool"), "check-config", str(CONFIG)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for labels, receiver in (
        (["severity=critical", "alertname=Coral2BeatNotTicking"], "coral2-oncall"),
        (["severity=warning", "alertname=Coral2DeadLetters"], "coral2-tickets"),
    ):
        routed = subprocess.run(
            [tool("amtool"), "config", "routes", "test", f"--config.file={CONFIG}", *labels],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert routed.stdout.strip() == receiver, routed.stdout + routed.stderr


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            tool("alertmanager"),
            f"--config.file={CONFIG}",
            f"--storage.path={tmp_path}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/api/v2"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/status", timeout=2).close()
            break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, "alertmanager never served"
            time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def fire(url: str, *alerts: dict[str, str]) -> None:
    body = json.dumps([{"labels": labels} for labels in alerts]).encode()
    request = urllib.request.Request(
        f"{url}/alerts", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    urllib.request.urlopen(request, timeout=10).close()


def states(url: str, count: int) -> dict[tuple[str, str], str]:
    """(alertname, instance) → active or suppressed, once Alertmanager holds ``count``
    alerts and has decided each one's inhibition."""
    deadline = time.monotonic() + 30
    while True:
        with urllib.request.urlopen(f"{url}/alerts", timeout=10) as answer:
            found = json.load(answer)
        decided = {
            (a["labels"]["alertname"], a["labels"]["instance"]): a["status"]["state"] for a in found
        }
        if len(decided) == count and "unprocessed" not in decided.values():
            return decided
        assert time.monotonic() < deadline, decided
        time.sleep(0.1)


def test_redis_unreadable_silences_the_instances_other_alerts(alertmanager: str) -> None:
    instance = {"instance": "mgmt1:9464"}
    fire(
        alertmanager,
        {"alertname": "Coral2PipelineExporterCannotReadRedis", "severity": "critical", **instance},
        {"alertname": "Coral2WatcherNotLeading", "severity": "critical", **instance},
        {"alertname": "Coral2DeadLetters", "severity": "warning", **instance},
        {"alertname": "Coral2WatcherNotLeading", "severity": "critical", "instance": "mgmt2:9464"},
    )
    assert states(alertmanager, 4) == {
        ("Coral2PipelineExporterCannotReadRedis", "mgmt1:9464"): "active",
        ("Coral2WatcherNotLeading", "mgmt1:9464"): "suppressed",
        ("Coral2DeadLetters", "mgmt1:9464"): "suppressed",
        ("Coral2WatcherNotLeading", "mgmt2:9464"): "active",  # another instance's fault
    }


def test_a_critical_alert_silences_its_instances_warning(alertmanager: str) -> None:
    instance = {"instance": "mgmt1:9464"}
    fire(
        alertmanager,
        {"alertname": "Coral2BeatNotTicking", "severity": "critical", **instance},
        {"alertname": "Coral2PipelineWarning", "severity": "warning", **instance},
    )
    assert states(alertmanager, 2) == {
        ("Coral2BeatNotTicking", "mgmt1:9464"): "active",
        ("Coral2PipelineWarning", "mgmt1:9464"): "suppressed",
    }

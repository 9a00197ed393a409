"""Options that would be taken and then do nothing, or start a service on nothing, are
refused in one line: ``breakdown --mapping`` without ``--hosts`` (the mapping was never
read), ``node-worker --cxi-devices`` naming no CXI device (``''``, ``,,``, ``eth0``), and
``sim clientmountd --hostname`` naming no node, or one that is not a hostname."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BREAKDOWN = """
kind: DirectiveBreakdown
metadata: {name: fluxjob-1-0}
status:
  ready: true
  storage:
    lifetime: job
    reference: {kind: Servers, name: fluxjob-1-0, namespace: default}
    allocationSets:
    - {allocationStrategy: AllocatePerCompute, minimumCapacity: 10737418240, label: xfs}
"""


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", *argv],
        capture_output=True, text=True, timeout=60, check=False,
        env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip


def test_a_mapping_without_hosts_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bd.yaml").write_text(BREAKDOWN)
    (tmp_path / "res.json").write_text(json.dumps([{"type": "node", "count": 2}]))
    (tmp_path / "map.json").write_text("{}")
    files = {name: str(tmp_path / name) for name in ("bd.yaml", "res.json", "map.json")}
    done = run(
        "breakdown", "--breakdown", files["bd.yaml"], "--resources", files["res.json"],
        "--mapping", files["map.json"],
    )  # fmt: skip
    assert done.returncode == 1
    assert (
        done.stderr
        == "coral2-pipeline breakdown: --mapping goes with --hosts HOSTLIST (the job's computes)\n"
    )


@pytest.mark.parametrize("devices", ["", ",,", "eth0", "cxi0,../x"])
def test_cxi_devices_naming_no_cxi_device_are_refused(devices: str) -> None:
    done = run("node-worker", "--hostname", "compute01", "--cxi-devices", devices)
    assert done.returncode != 0
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"coral2-pipeline node-worker: --cxi-devices {devices!r}:")


@pytest.mark.parametrize("hostname", ["", "../x", "comp?te01"])
def test_the_simulated_clientmountd_takes_names_through_the_hostname_check(
    tmp_path: Path, hostname: str
) -> None:
    done = run("sim", "clientmountd", "--hostname", hostname, "--sim-root", str(tmp_path))
    assert done.returncode != 0
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("coral2-pipeline sim: --hostname: ")
    assert list(tmp_path.iterdir()) == []

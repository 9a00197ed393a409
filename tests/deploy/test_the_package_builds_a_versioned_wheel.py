"""``python -m build`` makes the wheel a site installs: named and versioned as
``pipeline.__version__`` says (the one place the version is written), holding the data
files the commands read (the sample cluster, the RBAC rules, the typing marker) and the
three packages, and no simulator: those are a distribution of their own
(``simulator/``), whose wheel holds them and their stepping clock's C source. The
command the product installs reports its version."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from pipeline import __version__

REPO = Path(__file__).resolve().parents[2]


def test_the_wheel_is_versioned_and_holds_its_data(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path), str(REPO)],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [wheel] = tmp_path.glob("*.whl")
    assert wheel.name == f"coral2_pipeline-{__version__}-py3-none-any.whl"
    names = set(zipfile.ZipFile(wheel).namelist())
    for data in (
        "pipeline/data/sample-cluster.toml",
        "pipeline/data/sample-rabbitmapping.json",
        "pipeline/data/k8s-rbac.yaml",
        "pipeline/py.typed",
        "node_worker/app.py",
        "beat_schedules/schedule.py",
    ):
        assert data in names, data
    assert not [n for n in names if n.startswith("tests/")]
    assert not [n for n in names if n.startswith(("coral2_sim/", "pipeline/sim/"))]
    assert not [n for n in names if n.endswith(("demo_cmd.py", "sim_cmd.py", ".c"))]
    # the RBAC rules the demo enforces are those deploy/k8s ships (a link in the tree)
    rbac = zipfile.ZipFile(wheel).read("pipeline/data/k8s-rbac.yaml")
    assert rbac == (REPO / "deploy" / "k8s" / "coral2-pipeline.yaml").read_bytes()


def test_the_simulators_wheel_holds_them_and_plugs_them_in(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path),
         str(REPO / "simulator")],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [wheel] = tmp_path.glob("*.whl")
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    for data in (
        "coral2_sim/data/clockstep.c",
        "coral2_sim/cli/demo_cmd.py",
        "coral2_sim/py.typed",
    ):
        assert data in names, data
    assert not [n for n in names if n.startswith(("pipeline/", "node_worker/"))]
    [points] = [n for n in names if n.endswith("entry_points.txt")]
    text = archive.read(points).decode()
    assert "[coral2_pipeline.commands]" in text and "demo = coral2_sim.cli.demo_cmd" in text
    assert "simulated = coral2_sim.node.plugin:PLUGIN" in text


def test_the_command_reports_the_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "--version"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == f"coral2-pipeline {__version__}"

"""``python -m build`` makes the wheel a site installs: named and versioned as
``pipeline.__version__`` says (the one place the version is written), holding the data
files the commands read (the sample cluster, the stepping clock's C source, the typing
marker) and the three packages; and the command it installs reports that version."""

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
        "pipeline/data/clockstep.c",
        "pipeline/data/k8s-rbac.yaml",
        "pipeline/py.typed",
        "node_worker/app.py",
        "beat_schedules/schedule.py",
    ):
        assert data in names, data
    assert not [n for n in names if n.startswith("tests/")]
    # the RBAC rules the demo enforces are those deploy/k8s ships (a link in the tree)
    rbac = zipfile.ZipFile(wheel).read("pipeline/data/k8s-rbac.yaml")
    assert rbac == (REPO / "deploy" / "k8s" / "coral2-pipeline.yaml").read_bytes()


def test_the_command_reports_the_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "--version"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == f"coral2-pipeline {__version__}"

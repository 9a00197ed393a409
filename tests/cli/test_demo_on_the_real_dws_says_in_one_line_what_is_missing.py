"""``demo --dws real`` where the real DWS stack is not built says so in one line, naming
what is missing and how to build it, before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_a_missing_stack_is_one_line_naming_it(tmp_path: Path) -> None:
    env = dict(
        os.environ,
        CORAL2_DWS_REAL_BIN=str(tmp_path / "bin"),
        CORAL2_DWS_REAL_SRC=str(tmp_path / "src"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "demo", "--dws", "real"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    [line] = done.stderr.splitlines()
    assert line.startswith("coral2-pipeline demo: --dws real: not built (make dws-real")
    assert str(tmp_path / "bin" / "kube-apiserver") in line
    assert "Traceback" not in done.stdout + done.stderr
    assert not list(tmp_path.iterdir())  # nothing made

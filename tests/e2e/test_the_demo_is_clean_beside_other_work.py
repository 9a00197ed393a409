"""``make demo`` ends clean however busy the machine is: the whole demo (``coral2-pipeline
demo --json``) runs while two processes keep both cores busy, and every job ends as it
must, nothing leaks, the busy node is drained and swept, and the command exits 0. Nothing
in it waits on a clock racing the pipeline: the busy job's services stay busy until the
demo's sweep ends the processes its job left (coral2_sim.demo.sweep). It leaves no work
directory behind (the keys and passwords it made go with it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from coral2_sim.demo.batch import batch

#: the demo's whole batch on a machine kept busy: waited for, however long it takes
pytestmark = pytest.mark.timeout(900)

BURN = "while True: pass"


@pytest.fixture
def busy_cores() -> Iterator[None]:
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(os.cpu_count() or 2)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def test_the_demo_ends_clean_with_every_core_busy(busy_cores: None, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "demo", "--json"],
        capture_output=True,
        text=True,
        timeout=880,
        check=False,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["jobs"]["unexpected"] == []
    assert report["leaks"] == []
    assert report["jobs"]["submitted"] == len(batch(24))  # the demo's default batch
    assert len(report["swept"]) == 1 and "swept clean" in report["swept"][0]
    # and it took its work directory (logs, keys, passwords) away with it
    assert list(tmp_path.glob("coral2-demo-*")) == []

"""A command whose output cannot be written — standard output on ``/dev/full`` — says so
in one line on stderr and exits 1, whether the output is a help text (which argparse
would drop silently, exiting 0), the version, or a command's answer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

MAPPING = Path(__file__).resolve().parents[2] / "pipeline" / "data" / "sample-rabbitmapping.json"


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--version"],
        ["getrabbit", "--help"],
        ["getrabbit", "--mapping", str(MAPPING), "-c", "compute01"],
    ],
    ids=["help", "version", "command-help", "answer"],
)
def test_a_full_disk_is_one_line_and_exit_1(argv: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "pipeline.cli", *argv],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().endswith("cannot write its output: No space left on device")
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr

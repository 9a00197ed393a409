"""``benchmarks.fanout`` runs at its smallest size — one rabbit's 16 computes — and prints
its figures: the smoke test that keeps it from breaking unseen (it once failed at 4,000
nodes, reading the job's timeline a moment before its last entry was written). It asserts
that each figure is printed, never how long anything took."""

from __future__ import annotations

import re
import subprocess
import sys

FIGURES = (
    r"16 nodes, 1 worker process\(es\): pipeline [\d.]+ s \(send [\d.]+ s \+ count [\d.]+ s\)",
    r"[\d.]+ ms CPU per node",
    r"RUN → released [\d.]+ s",
    r"epilog \(CLEANUP → VNIs out of quarantine, the pipeline's part\) [\d.]+ s",
    r"[\d.]+ broker pushes per node, 0 API requests from nodes",
)


def test_it_prints_every_figure_for_one_rabbits_computes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.fanout", "--nodes", "16"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    for figure in FIGURES:
        assert re.search(figure, done.stdout), (figure, done.stdout)

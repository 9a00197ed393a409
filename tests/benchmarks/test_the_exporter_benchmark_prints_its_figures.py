"""``benchmarks.exporter`` runs at its smallest size — 16 computes with their node workers
connected, 10 jobs — and prints its figures: the scrape's and ``status``'s CPU, theirs and
Redis's, and ``slingshot pool``'s. It asserts each figure is printed, never a time."""

from __future__ import annotations

import re
import subprocess
import sys

FIGURES = (
    r"16 computes \(\d+ Redis clients\), 10 jobs",
    r"a scrape [\d.]+ ms CPU p50 \([\d.]+ max\) \+ [\d.]+ ms in Redis",
    r"status [\d.]+ ms CPU \+ [\d.]+ ms in Redis",
    r"a whole status process \d+ ms",
    r"slingshot pool [\d.]+ ms, --json [\d.]+ ms",
)


def test_it_prints_every_figure_for_sixteen_computes() -> None:
    argv = [sys.executable, "-m", "benchmarks.exporter", "--nodes", "16", "--jobs", "10"]
    done = subprocess.run(
        [*argv, "--scrapes", "2"], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for figure in FIGURES:
        assert re.search(figure, done.stdout), (figure, done.stdout)

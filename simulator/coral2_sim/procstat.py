"""What the simulated system's processes cost, read from /proc (Linux): the benchmarks and
the CPU-time test take readings around a phase and compare them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def footprint(pid: int) -> tuple[int, float]:
    """(threads, resident MiB) of process ``pid``.

    The benchmark compares them before and after thousands of jobs: a worker
    that grows with the jobs it has run leaks.
    """
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["Threads"]), int(fields["VmRSS"].split()[0]) / 1024


def cpu_seconds(pids: Mapping[str, int]) -> dict[str, float]:
    """CPU seconds (user + system) used so far by each named process and by this one
    (``"this process"``: the simulated Flux, the hooks, the caller's own work).

    Where the machine's cores went, per job, says more than a rate when the
    processes share them.
    """
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for name, pid in pids.items():
        try:
            # after the ")" that ends the command name, utime and stime (fields 14 and 15
            # in proc(5)) are items 11 and 12
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:  # gone: it used nothing more
            continue
        out[name] = (int(fields[11]) + int(fields[12])) / tick
    own = os.times()
    out["this process"] = own.user + own.system
    return out

"""The chaos matrix: ``make chaos``'s harness run for each fault class and seed, one line
each — lost, stuck, duplicate and leaked — and one table at the end.

``python -m coral2_sim.chaos_matrix [--seeds 1,2,3,4,5] [--jobs 300]
[--classes worker,node-worker,...] [--out matrix.jsonl]``: each run appends its line to
``--out`` as it ends, so a long matrix can be read while it runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from coral2_sim.chaos import run_chaos
from coral2_sim.chaos_faults import CLASSES

ORDER: tuple[str, ...] = ("worker", "node-worker", "watcher", "beat", "bridge", "redis")
ORDER += ("kube-api", "clock", "mixed")
#: Seconds between two faults of a one-process class (a worker killed every second
#: never runs a task: the batch would not end)
EVERY_ONE_S = 5.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--classes", default=",".join(ORDER))
    parser.add_argument(
        "--every", type=float, default=1.0, help="seconds between faults of the mixed class"
    )
    parser.add_argument("--drain", type=float, default=300.0)
    parser.add_argument("--out", default="chaos-matrix.jsonl")
    args = parser.parse_args(argv)
    classes = [c for c in args.classes.split(",") if c]
    unknown = [c for c in classes if c not in CLASSES]
    if unknown:
        parser.error(f"unknown fault classes {unknown}; the classes are {', '.join(ORDER)}")
    seeds = [int(s) for s in args.seeds.split(",") if s]
    rows = []
    bad = 0
    # seed by seed: a matrix stopped early has covered every class as far as it went
    for seed in seeds:
        for faults in classes:
            # one process struck about every EVERY_ONE_S: a class of one process's faults
            # strikes it that often, the mixed class spreads its faults over all of them
            every = args.every if faults == "mixed" else EVERY_ONE_S
            report = run_chaos(
                args.jobs,
                seed=seed,
                every_s=every,
                drain_s=args.drain,
                faults=faults,
                min_faults=args.jobs // (25 if faults == "redis" else 10),
            )
            row = {
                "faults": faults,
                "seed": seed,
                "jobs": report.jobs,
                "applied": report.applied,
                "lost": len(report.lost),
                "stuck": len(report.wrong),
                "duplicate": len(report.duplicates),
                "leaked": len(report.leaks),
                "seconds": round(report.seconds),
                "problems": (report.lost + report.wrong + report.duplicates + report.leaks)[:5],
                "workdir": report.workdir,
            }
            rows.append(row)
            bad += not report.ok
            with Path(args.out).open("a") as out:
                out.write(json.dumps(row) + "\n")
            print(f"{faults} seed {seed}: {report.line()} ({report.applied} faults)", flush=True)
    table = Table(title=f"chaos matrix: {args.jobs} jobs a run")
    for column in ("faults", "seed", "faults applied", "lost", "stuck", "duplicate", "leaked"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            *(str(row[k]) for k in ("faults", "seed", "applied", "lost", "stuck")),
            str(row["duplicate"]),
            str(row["leaked"]),
        )
    Console().print(table)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""El Capitan-sized inputs and the model benchmarks (foundation issue).

The system: 11,136 computes with 96 cores and 4 GPUs each, 16 per rabbit
(696 rabbits, 36 chunks of capacity each), which gives upstream's graph of
1,150,489 vertices. ``dws2jgf`` runs as a separate process, exactly as an
admin runs it, so its peak RSS is the process's own.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pipeline.model.breakdown import apply_breakdowns, build_allocation_sets
from pipeline.model.directives import parse_directives
from pipeline.model.hostlist import encode_hostlist
from pipeline.model.nnf import breakdown_for
from pipeline.model.rabbitmap import RabbitMapping

COMPUTES = 11_136
PER_RABBIT = 16
CAPACITY = 39_582_418_599_936  # bytes per rabbit


def system(computes: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return (R, rabbitmapping) for ``computes`` El Capitan computes."""
    hosts = [f"elcap{1001 + i}" for i in range(computes)]
    rabbits: dict[str, Any] = {}
    mapping: dict[str, str] = {}
    for r in range(computes // PER_RABBIT):
        name = f"elcap-rabbit{r + 1:03d}"
        group = hosts[r * PER_RABBIT : (r + 1) * PER_RABBIT]
        rabbits[name] = {"capacity": CAPACITY, "hostlist": encode_hostlist(group)}
        mapping.update(dict.fromkeys(group, name))
    r_obj = {
        "version": 1,
        "execution": {
            "R_lite": [{"rank": f"0-{computes - 1}", "children": {"core": "0-95", "gpu": "0-3"}}],
            "starttime": 0.0,
            "expiration": 0.0,
            "nodelist": [encode_hostlist(hosts)],
        },
    }
    return r_obj, {"computes": mapping, "rabbits": rabbits}


def bench_dws2jgf(computes: int) -> dict[str, float]:
    """Run ``coral2-pipeline dws2jgf`` on the system; return seconds, peak MiB, vertices, bytes."""
    r_obj, mapping = system(computes)
    with tempfile.TemporaryDirectory() as tmp:
        rpath, mpath, opath = Path(tmp, "R.json"), Path(tmp, "map.json"), Path(tmp, "out.jgf")
        rpath.write_text(json.dumps(r_obj))
        mpath.write_text(json.dumps(mapping))
        with rpath.open() as stdin, opath.open("w") as stdout:
            start = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pipeline.cli",
                    "dws2jgf",
                    "--cluster-name",
                    "elcap",
                    str(mpath),
                ],
                stdin=stdin,
                stdout=stdout,
                check=True,
            )
            seconds = time.perf_counter() - start
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        size = opath.stat().st_size
        vertices = 0
        with opath.open() as out:
            while chunk := out.read(1 << 24):
                vertices += chunk.count('{"id": "')
    return {"seconds": seconds, "peak_mib": peak_mib, "vertices": vertices, "bytes": size}


def bench_breakdowns(repeat: int = 50) -> float:
    """Return the best time (ms) of apply_breakdowns + build_allocation_sets, whole-system job."""
    _, raw_map = system(COMPUTES)
    mapping = RabbitMapping.parse(raw_map)
    directives = parse_directives(
        [
            "#DW jobdw type=lustre capacity=2000TiB name=global-scratch",
            "#DW jobdw type=xfs capacity=512GiB name=local",
        ]
    )
    bds = [
        breakdown_for(d, workflow="fluxjob-1", index=i, userid=1) for i, d in enumerate(directives)
    ]
    breakdowns = [b for b in bds if b is not None]
    resources = [
        {
            "type": "node",
            "count": COMPUTES,
            "with": [
                {
                    "type": "slot",
                    "count": 1,
                    "label": "task",
                    "with": [{"type": "core", "count": 96}],
                }
            ],
        }
    ]
    counts = mapping.nodes_per_rabbit(mapping.computes)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        apply_breakdowns(breakdowns, resources)
        for bd in breakdowns:
            build_allocation_sets(bd["status"]["storage"]["allocationSets"], counts, COMPUTES)
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> None:
    """``python -m benchmarks.elcap [--computes 11136] [--repeat 50]``: the model's two
    figures at one size (``make bench`` runs the quarter and the whole system)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--computes", type=int, default=COMPUTES)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    ms = bench_breakdowns(args.repeat)
    print(f"apply_breakdowns + build_allocation_sets, whole-system lustre+xfs job: {ms:.2f} ms")
    result = bench_dws2jgf(args.computes)
    print(
        f"dws2jgf, {args.computes:,} computes: {result['seconds']:.2f} s, "
        f"{result['peak_mib']:.0f} MiB peak, {result['vertices']:,} vertices, "
        f"{result['bytes']:,} bytes"
    )


if __name__ == "__main__":
    main()

"""``make record-dws``: play every DWS scenario (:mod:`tests.dws.scenarios`) through the
pipeline on the real DWS and nnf-sos that ``make dws-real`` built, and write what the
pipeline saw to ``tests/dws/recorded/<scenario>.json``.

The ordinary suite replays every recording against the simulated DWS and nnf-sos
(``tests/dws/test_the_simulated_dws_answers_as_the_recorded_real_one.py``), so the
simulator cannot drift from the real stack on a machine that has not built it; a changed
answer after an upgrade shows in review as a diff of these files. Each file names the
releases it was recorded from and the date: the managers built by hand have no version
the recorder can read, so say them with ``DWS_VERSION`` and ``NNF_SOS_VERSION``.

Run as ``python -m tests.dws.record [SCENARIO ...]`` (all without arguments).
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from pathlib import Path
from typing import Any

from coral2_sim.dws_real_found import PINS, NotBuilt, RealDws

from tests.dws.scenarios import SCENARIOS, Scenario, play
from tests.e2e.conftest import start_system

RECORDED = Path(__file__).parent / "recorded"


def recording(scenario: Scenario, jobs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "scenario": scenario.name,
        "versions": {
            "dws": os.environ["DWS_VERSION"],
            "nnf-sos": os.environ["NNF_SOS_VERSION"],
            "kubernetes and etcd": PINS,
        },
        "recorded": datetime.date.today().isoformat(),
        "what": scenario.what,
        "jobs": jobs,
    }


def load(name: str) -> dict[str, Any]:
    recorded: dict[str, Any] = json.loads((RECORDED / f"{name}.json").read_text())
    return recorded


def main(argv: list[str]) -> int:
    wanted = [s for s in SCENARIOS if not argv or s.name in argv]
    unknown = set(argv) - {s.name for s in SCENARIOS}
    if unknown:
        print(f"record-dws: no scenario {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    missing = [v for v in ("DWS_VERSION", "NNF_SOS_VERSION") if not os.environ.get(v)]
    if missing:
        print(f"record-dws: say the releases built with {' and '.join(missing)}", file=sys.stderr)
        return 2
    try:
        RealDws.find()
    except NotBuilt as exc:
        print(f"record-dws: {exc}", file=sys.stderr)
        return 3
    system = start_system(dws_stack="real")
    try:
        for scenario in wanted:
            path = RECORDED / f"{scenario.name}.json"
            path.write_text(
                json.dumps(recording(scenario, play(system, scenario)), indent=1) + "\n"
            )
            print(f"record-dws: {path}")
    finally:
        system.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

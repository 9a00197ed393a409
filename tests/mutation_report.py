"""The summary ``make mutate`` prints after mutmut's run: the mutants by outcome, the
score (killed of those any test runs), and the survivors and untested mutants by module,
so that each can be killed by a test stating its rule or shown equivalent
(docs/testing.md, "Mutation testing"). Exits 1 when the score is under ``--floor``.

``python -m tests.mutation_report [--floor 60] [--list]``
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

MUTMUT = str(Path(sys.executable).parent / "mutmut")


def outcomes() -> dict[str, str]:
    """Mutant name → its outcome (killed, survived, no tests, timeout…), as mutmut keeps
    them in ``mutants/``."""
    done = subprocess.run(
        [MUTMUT, "results", "--all", "true"], capture_output=True, text=True, check=True
    )
    found: dict[str, str] = {}
    for line in done.stdout.splitlines():
        name, sep, outcome = line.strip().rpartition(": ")
        if sep and name.startswith("pipeline."):
            found[name] = outcome
    return found


def module_of(mutant: str) -> str:
    """``pipeline.states.nodes.x_release__mutmut_3`` → ``pipeline.states.nodes``."""
    return mutant.rsplit(".", 1)[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--floor", type=float, default=0.0, help="the lowest score, in %%")
    parser.add_argument("--list", action="store_true", help="name every survivor")
    args = parser.parse_args()
    found = outcomes()
    if not found:
        print("mutation: no results; run `make mutate` (mutmut run) first", file=sys.stderr)
        return 1
    counts = Counter(found.values())
    tested = counts["killed"] + counts["survived"] + counts["timeout"]
    score = 100.0 * (counts["killed"] + counts["timeout"]) / tested if tested else 0.0
    print(
        f"mutation: {len(found)} mutants of pipeline/states: {counts['killed']} killed, "
        f"{counts['survived']} survived, {counts['no tests']} run by no test, "
        f"{counts['timeout']} timed out; score {score:.1f} % of those tested "
        f"({100.0 * counts['killed'] / len(found):.1f} % of all)"
    )
    by_module: dict[str, Counter[str]] = defaultdict(Counter)
    for name, outcome in found.items():
        by_module[module_of(name)][outcome] += 1
    for module, seen in sorted(by_module.items()):
        print(
            f"  {module}: {seen['killed']} killed, {seen['survived']} survived, "
            f"{seen['no tests']} untested"
        )
    if args.list:
        for name, outcome in sorted(found.items()):
            if outcome in ("survived", "no tests"):
                print(f"  {outcome}: {name} (mutmut show {name})")
    if score < args.floor:
        print(f"mutation: the score {score:.1f} % is under the floor {args.floor:g} %")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

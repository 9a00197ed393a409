"""One scenario's trace against its recording, as a replay compares them
(:func:`tests.dws.scenarios.compared`): a difference names the scenario, the job and
both sequences."""

from __future__ import annotations

import difflib
import json
from typing import Any

from tests.dws.scenarios import compared


def differences(name: str, recorded: list[dict[str, Any]], played: list[dict[str, Any]]) -> str:
    """Empty when ``played`` is what ``recorded`` holds; else each difference in words."""
    if len(recorded) != len(played):
        return f"{name}: recorded {len(recorded)} jobs, played {len(played)}"
    out = []
    for n, (real, sim) in enumerate(zip(recorded, played, strict=True), 1):
        want, got = compared(real), compared(sim)
        for field in ("result", "exceptions", "events", "workflow"):
            if want[field] != got[field]:
                diff = difflib.unified_diff(
                    [json.dumps(x) for x in _lines(want[field])],
                    [json.dumps(x) for x in _lines(got[field])],
                    "real (recorded)",
                    "played",
                    lineterm="",
                )
                out.append(f"{name}, job {n} of {len(recorded)}, {field}:\n" + "\n".join(diff))
    return "\n".join(out)


def _lines(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]

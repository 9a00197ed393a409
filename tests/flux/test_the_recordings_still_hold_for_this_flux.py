"""The Flux installed here still answers each conformance check as its recording says
(``tests/flux/recorded/``), so the replay in the ordinary suite checks the simulator
against what this Flux does; an answer that changed (a newer flux-core, Fluxion or
flux-coral2) fails here, naming the check: ``make record-flux`` records it again, and the
diff shows what changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipeline.clients.flux_site import FluxSite
from tests.flux.record import CHECKS, RECORDED
from tests.sim.flux.test_the_simulated_flux_answers_as_the_recorded_real_one import shape

#: What differs from one run to the next, and so is not compared: the answers alone are.
STAMP = ("check", "versions", "recorded")


def comparable(check: str, body: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps({k: v for k, v in body.items() if k not in STAMP}))
    if check == "resource-journal":  # timestamps differ: the events and their keys do not
        out["responses"] = shape(out["responses"])
    return out


@pytest.mark.parametrize("check", list(CHECKS))
def test_this_flux_answers_as_recorded(check: str, flux_site: FluxSite, tmp_path: Path) -> None:
    recorded = json.loads((RECORDED / f"{check}.json").read_text())
    live = CHECKS[check](flux_site, tmp_path)
    assert comparable(check, live) == comparable(check, recorded), (
        f"{flux_site.describe()} answers {check} otherwise than the recording of "
        f"{recorded['versions']} ({recorded['recorded']}): run `make record-flux`"
    )

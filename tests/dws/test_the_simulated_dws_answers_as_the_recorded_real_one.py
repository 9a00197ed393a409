"""Every scenario recorded from the real DWS and nnf-sos (``make record-dws``), played
again through the pipeline on the simulated ones: the same outcome, the same exceptions
in the same words, the same events and the same Workflow steps — on every machine,
whether or not it has built the real stack."""

from __future__ import annotations

import pytest
from coral2_sim.system import SimulatedSystem

from tests.dws.compare import differences
from tests.dws.record import RECORDED, load
from tests.dws.scenarios import SCENARIOS, Scenario, play

RECORDINGS = sorted(path.stem for path in RECORDED.glob("*.json"))


def test_every_scenario_has_a_recording() -> None:
    assert sorted(s.name for s in SCENARIOS) == RECORDINGS


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_the_simulator_answers_as_the_real_stack_did(
    system: SimulatedSystem, scenario: Scenario
) -> None:
    recorded = load(scenario.name)
    assert not (found := differences(scenario.name, recorded["jobs"], play(system, scenario))), (
        f"the simulator differs from {recorded['versions']} (recorded {recorded['recorded']}):\n"
        + found
    )

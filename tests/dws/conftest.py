"""One simulated system (the simulated DWS and nnf-sos) for the replay of the recordings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import start_system


@pytest.fixture(scope="module")
def system() -> Iterator[SimulatedSystem]:
    sim = start_system()
    yield sim
    sim.stop()

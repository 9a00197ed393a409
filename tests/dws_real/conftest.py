"""The real-DWS tier's world: the simulated system of ``make demo`` — Redis, the pipeline's
processes, the node workers, the simulated Flux job manager — with the real DWS and
nnf-sos on a real API server in place of the simulated ones (:mod:`coral2_sim.dws_real`).
One system for the tier, in one module (the real stack's webhook takes a fixed port, and
pytest-xdist's --dist loadscope gives each module a process of its own)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import pytest_runtest_makereport, start_system

#: a failed test shows each process's log and the story of each job it did not see end
__all__ = ["pytest_runtest_makereport"]


@pytest.fixture(scope="package")
def system() -> Iterator[SimulatedSystem]:
    sim = start_system(dws_stack="real")  # a start that fails stops what it started
    yield sim
    sim.stop()

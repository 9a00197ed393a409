"""A worker SIGKILLed with jobs in flight, and not restarted: its heartbeat stops, and
``housekeeping.redeliver`` sends again at once what it took with it, not ``resend_after``
(here 10 minutes) later. Each job in flight then ends long before the ledger's own resend
could have brought its lost messages back, on the worker that is left."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import nodes, start_system

RESEND_AFTER_S = 600.0


@pytest.fixture(scope="module")
def system() -> Iterator[SimulatedSystem]:
    env = {"CORAL2_PIPELINE_PIPELINE__RESEND_AFTER": str(RESEND_AFTER_S)}
    sim = start_system(workers=2, extra_env=env)
    yield sim
    sim.stop()


def test_jobs_in_flight_end_before_the_ledger_would_have_resent(system: SimulatedSystem) -> None:
    assert system.flux is not None
    flux = system.flux
    dw = "#DW jobdw type=xfs capacity=8GiB name=scratch"
    submitted = time.monotonic()
    ids = [flux.submit(nodes(2), system={"dw": dw}, runtime_s=0.5) for _ in range(6)]
    deadline = time.monotonic() + 60
    while not any(flux.job(j).state in ("RUN", "CLEANUP") for j in ids):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    system.kill("worker")  # the first of the two; the second carries on
    # the messages the ledger would send again only after RESEND_AFTER_S
    ended = flux.wait_inactive(ids, RESEND_AFTER_S - (time.monotonic() - submitted) - 60)
    assert ended, [(j, flux.job(j).state) for j in ids]
    assert [flux.job(j).result for j in ids] == ["COMPLETED"] * len(ids)

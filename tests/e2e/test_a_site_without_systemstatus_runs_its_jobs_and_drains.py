"""The whole system on a site whose DWS has no SystemStatus ``default`` (neither dws nor
nnf-sos makes it): jobs of every kind run, a rabbit outage drains its compute and takes
its ssds down in Flux as anywhere else, no task fails for good for want of the object,
and ``status`` says it is missing."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from coral2_sim.demo.metrics import leaks
from coral2_sim.demo.outage import rabbit_outage
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import run, start_system


@pytest.fixture(scope="module")
def system() -> Iterator[SimulatedSystem]:
    sim = start_system(systemstatus=False)
    yield sim
    sim.stop()


@pytest.mark.parametrize(
    "dw",
    [
        "#DW jobdw type=xfs capacity=10GiB name=scratch",
        "#DW jobdw type=gfs2 capacity=10GiB name=shared",
        None,
    ],
)
def test_jobs_of_every_kind_complete(system: SimulatedSystem, dw: str | None) -> None:
    job = run(system, dw, n=2, timeout_s=120)
    assert job.result == "COMPLETED", job.exceptions


def test_a_rabbit_outage_drains_and_recovers_as_anywhere(system: SimulatedSystem) -> None:
    lines, problem = rabbit_outage(system)
    assert problem == "", lines


def test_nothing_failed_for_good_and_status_names_the_missing_object(
    system: SimulatedSystem,
) -> None:
    assert system.store is not None
    argv = [sys.executable, "-m", "pipeline.cli", "status", "--json"]
    answer = subprocess.run(
        argv, env=system.env(), capture_output=True, text=True, timeout=120, check=False
    )
    report = json.loads(answer.stdout)
    assert any("no SystemStatus default" in flag for flag in report["flags"]), report
    assert not any("failed for good" in flag for flag in report["flags"]), report
    deadline = time.monotonic() + 60  # deletions finish after the jobs end
    while (left := leaks(system)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == []

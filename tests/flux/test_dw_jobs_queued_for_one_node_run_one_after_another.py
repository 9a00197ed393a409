"""On the real Flux with Fluxion, ``#DW`` jobs that can only run on one node wait for it
and run one after another, each getting the rabbit's ssd in turn (with the site's default
time limit: Fluxion calls a job that must wait behind jobs without one unsatisfiable)."""

from __future__ import annotations

from tests.flux.conftest import Tier

DW = "--setattr=system.dw=#DW jobdw type=xfs capacity=64GiB name=scratch"


def test_every_job_completes(tier: Tier) -> None:
    jobs = [tier.submit("-N1", DW, "--requires=host:compute03", "true") for _ in range(3)]
    for jobid in jobs:
        tier.wait_inactive(jobid)
    results = [tier.flux.flux("jobs", "-no", "{result}", str(j)).strip() for j in jobs]
    assert results == ["COMPLETED"] * 3, [tier.events(j) for j in jobs]
    assert tier.settled() == []

"""On the real Flux, a ``#DW`` job cancelled in DEPEND (its Workflow made, a dependency
still holding it), in SCHED (waiting for nodes) or in RUN ends INACTIVE, and the pipeline
and Flux are left holding nothing: no Workflow, no VNI, no CXI service, no node."""

from __future__ import annotations

from tests.flux.conftest import Tier

DW = "--setattr=system.dw=#DW jobdw type=xfs capacity=10GiB name=scratch"


def test_cancelled_in_depend(tier: Tier) -> None:
    blocker = tier.submit("-N1", "sleep", "300")
    jobid = tier.submit("-N1", DW, f"--dependency=afterany:{blocker}", "true")
    tier.flux.flux("job", "wait-event", "-t", "60", str(jobid), "memo")  # the Workflow exists
    assert tier.flux.flux("jobs", "-no", "{state}", str(jobid)).strip() == "DEPEND"
    tier.flux.flux("cancel", str(jobid))
    tier.wait_inactive(jobid)
    tier.flux.flux("cancel", str(blocker))
    tier.wait_inactive(blocker)
    names = tier.names(jobid)
    assert "start" not in names and "prolog-start dws-setup" not in names
    assert tier.settled() == []


def test_cancelled_in_sched(tier: Tier) -> None:
    blocker = tier.submit("-N4", "sleep", "300")
    tier.flux.flux("job", "wait-event", "-t", "60", str(blocker), "start")
    jobid = tier.submit("-N1", DW, "true")
    tier.flux.flux("job", "wait-event", "-t", "60", str(jobid), "priority")
    assert tier.flux.flux("jobs", "-no", "{state}", str(jobid)).strip() == "SCHED"
    tier.flux.flux("cancel", str(jobid))
    tier.wait_inactive(jobid)
    tier.flux.flux("cancel", str(blocker))
    tier.wait_inactive(blocker)
    assert "alloc" not in tier.names(jobid)
    assert tier.settled() == []


def test_cancelled_in_run(tier: Tier) -> None:
    jobid = tier.submit("-N2", DW, "sleep", "300")
    tier.flux.flux("job", "wait-event", "-t", "60", str(jobid), "start")
    tier.flux.flux("cancel", str(jobid))
    tier.wait_inactive(jobid)
    names = tier.names(jobid)
    assert names.index("epilog-start dws-epilog") < names.index("epilog-finish dws-epilog")
    assert tier.settled() == []

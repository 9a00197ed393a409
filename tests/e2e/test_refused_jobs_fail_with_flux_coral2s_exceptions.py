"""Jobs the pipeline refuses fail with flux-coral2's exception and leave nothing behind."""

from __future__ import annotations

import time

from coral2_sim.system import SimulatedSystem

from pipeline.errors import NotFound
from tests.e2e.conftest import event_names, rpcs, run

#: hang guards, not timings: the real DWS tier runs these too, where nnf requeues a
#: Teardown's deletes every 5 s, on a machine as loaded as it may be
GUARD_S = 240.0


def gone(system: SimulatedSystem, jobid: int, timeout_s: float = GUARD_S) -> bool:
    assert system.dws is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            system.dws.get_workflow(f"fluxjob-{jobid}")
        except NotFound:
            return True
        time.sleep(0.05)
    return False


def test_storage_above_the_policy_maximum_fails_the_job_before_it_runs(
    system: SimulatedSystem,
) -> None:
    job = run(system, "#DW jobdw type=xfs capacity=4TiB name=huge", n=1)
    assert job.result == "FAILED"
    [fatal] = [e for e in job.exceptions if e["severity"] == 0]
    assert fatal["type"] == "dws"
    assert fatal["note"].startswith("DWS workflow interactions failed: 'Requested a total of")
    assert "max is 2048 GiB per node" in fatal["note"]
    assert "start" not in event_names(job)
    [update] = rpcs(system, "job-manager.dws.resource-update", job.id)
    assert update["errmsg"].startswith("'")
    assert gone(system, job.id)


def test_an_invalid_directive_is_refused_at_create_with_dws_message(
    system: SimulatedSystem,
) -> None:
    job = run(system, "#DW jobdw type=zfs capacity=1GiB name=bad", n=1)
    [fatal] = [e for e in job.exceptions if e["severity"] == 0]
    assert fatal["type"] == "dws-create"
    assert fatal["note"] == (
        "DWS workflow interactions failed: argument 'type' invalid string 'zfs'"
    )
    assert rpcs(system, "job-manager.dws.resource-update", job.id) == []


def test_a_job_cancelled_before_it_runs_is_torn_down_and_its_epilog_released(
    system: SimulatedSystem,
) -> None:
    assert system.flux is not None
    from tests.e2e.conftest import nodes

    jobid = system.flux.submit(
        nodes(2), system={"dw": "#DW jobdw type=xfs capacity=8GiB name=scratch"}
    )
    # Cancel the moment the Workflow exists, holding the job manager's lock, so that the
    # resource-update that releases the job's dependency cannot be delivered in between.
    flux = system.flux
    with flux.changed:
        assert flux.changed.wait_for(lambda: flux.job(jobid).memo.get("rabbit_workflow"), GUARD_S)
        assert flux.job(jobid).state == "DEPEND"
        flux.cancel(jobid)
    assert system.flux.wait_inactive([jobid], GUARD_S)
    job = system.flux.job(jobid)
    assert job.result == "CANCELED"
    names = event_names(job)
    assert "start" not in names and "prolog-start dws-setup" not in names
    assert names.index("epilog-start dws-epilog") < names.index("epilog-finish dws-epilog")
    assert rpcs(system, "job-manager.dws.prolog-remove", jobid) == []
    assert len(rpcs(system, "job-manager.dws.epilog-remove", jobid)) == 1
    assert gone(system, jobid)

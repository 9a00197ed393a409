"""The DWS scenarios against the real DWS and nnf-sos (mock hardware) instead of the
simulated ones: a DW job of each kind runs through simulated Flux and the pipeline and
completes, its Workflow then deleted once nnf's finalizer lets it go; and the DWS
scenarios of ``tests/e2e``, each run as it is there (imported: this tier's ``system``
fixture serves them). One module: the real stack's webhook port is fixed."""

from __future__ import annotations

import time
from typing import Any

import pytest
from coral2_sim.system import SimulatedSystem

from pipeline.errors import NotFound
from tests.e2e.conftest import run
from tests.e2e.test_a_dw_job_nnf_refuses_in_proposal_fails_with_nnfs_words import (
    test_an_unknown_profile_fails_the_job_with_nnfs_words,
)
from tests.e2e.test_a_rabbit_disabled_holds_new_dw_jobs_in_sched_until_enabled import (
    test_a_new_job_waits_while_every_rabbit_is_disabled_and_runs_once_enabled,
)
from tests.e2e.test_refused_jobs_fail_with_flux_coral2s_exceptions import (
    test_a_job_cancelled_before_it_runs_is_torn_down_and_its_epilog_released,
    test_an_invalid_directive_is_refused_at_create_with_dws_message,
    test_storage_above_the_policy_maximum_fails_the_job_before_it_runs,
)

KINDS: dict[str, Any] = {
    "xfs": "#DW jobdw type=xfs capacity=32GiB name=scratch",
    "gfs2": "#DW jobdw type=gfs2 capacity=32GiB name=shared",
    "raw": "#DW jobdw type=raw capacity=32GiB name=blk",
    "lustre": "#DW jobdw type=lustre capacity=100GiB name=lus",
    "two file systems": "#DW jobdw type=xfs capacity=8GiB name=one "
    "#DW jobdw type=gfs2 capacity=8GiB name=two",
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_job_completes(system: SimulatedSystem, kind: str) -> None:
    job = run(system, KINDS[kind], n=2, timeout_s=180)
    assert job.result == "COMPLETED", job.eventlog
    assert system.dws is not None
    deadline = time.monotonic() + 120  # nnf's finalizer deletes its children first
    while True:
        try:
            system.dws.get_workflow(f"fluxjob-{job.id}")
        except NotFound:
            break
        assert time.monotonic() < deadline, f"fluxjob-{job.id} outlived its job"
        time.sleep(0.2)


__all__ = [
    "test_a_job_cancelled_before_it_runs_is_torn_down_and_its_epilog_released",
    "test_a_new_job_waits_while_every_rabbit_is_disabled_and_runs_once_enabled",
    "test_an_invalid_directive_is_refused_at_create_with_dws_message",
    "test_an_unknown_profile_fails_the_job_with_nnfs_words",
    "test_storage_above_the_policy_maximum_fails_the_job_before_it_runs",
    "test_the_job_completes",
]

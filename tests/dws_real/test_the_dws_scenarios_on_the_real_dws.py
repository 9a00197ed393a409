"""The DWS scenarios against the real DWS and nnf-sos (mock hardware) instead of the
simulated ones, through simulated Flux and the pipeline: the DWS scenarios of
``tests/e2e``, each run as it is there (imported: this tier's ``system``
fixture serves them); and the recordings the simulator is held to (``tests/dws/recorded``)
still hold: played again here, each scenario gives the recorded outcome, words, events
and Workflow steps — a difference after an upgrade says to record again (``make
record-dws``) and to make the simulator answer as the new release does. One module: the
real stack's webhook port is fixed."""

from __future__ import annotations

import pytest
from coral2_sim.system import SimulatedSystem

from tests.dws.compare import differences
from tests.dws.record import load
from tests.dws.scenarios import SCENARIOS, Scenario, play
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


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_the_real_stack_answers_as_recorded(system: SimulatedSystem, scenario: Scenario) -> None:
    recorded = load(scenario.name)
    found = differences(scenario.name, recorded["jobs"], play(system, scenario))
    assert not found, f"record again with make record-dws:\n{found}"


__all__ = [
    "test_a_job_cancelled_before_it_runs_is_torn_down_and_its_epilog_released",
    "test_a_new_job_waits_while_every_rabbit_is_disabled_and_runs_once_enabled",
    "test_an_invalid_directive_is_refused_at_create_with_dws_message",
    "test_an_unknown_profile_fails_the_job_with_nnfs_words",
    "test_storage_above_the_policy_maximum_fails_the_job_before_it_runs",
    "test_the_real_stack_answers_as_recorded",
]

"""The DWS scenarios of ``tests/e2e``, each run as it is there, against the real DWS and
nnf-sos instead of the simulated ones (the ``system`` fixture of this tier)."""

from __future__ import annotations

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

__all__ = [
    "test_a_job_cancelled_before_it_runs_is_torn_down_and_its_epilog_released",
    "test_a_new_job_waits_while_every_rabbit_is_disabled_and_runs_once_enabled",
    "test_an_invalid_directive_is_refused_at_create_with_dws_message",
    "test_an_unknown_profile_fails_the_job_with_nnfs_words",
    "test_storage_above_the_policy_maximum_fails_the_job_before_it_runs",
]

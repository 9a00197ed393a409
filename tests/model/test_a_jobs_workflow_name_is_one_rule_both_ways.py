"""A job's Workflow is named by one rule, ``fluxjob-<decimal jobid>`` as flux-coral2 names
it, and read back by its inverse: a name the rule does not make (another prefix, leading
zeros, signs, non-ASCII digits, nothing after the prefix) names no job of ours."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipeline.model.workflow import is_ours, jobid_of_workflow, workflow_name


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_the_name_of_a_job_reads_back_as_that_job(jobid: int) -> None:
    name = workflow_name(jobid)
    assert name == f"fluxjob-{jobid}"
    assert jobid_of_workflow(name) == jobid and is_ours(name)


def test_names_the_rule_does_not_make_name_no_job() -> None:
    for name in ("fluxjob-", "fluxjob-007", "fluxjob-+7", "fluxjob--7", "fluxjob-٣", "myjob-7",
                 "xfluxjob-7", "fluxjob-7a", "fluxjob- 7"):  # fmt: skip
        assert jobid_of_workflow(name) is None, name

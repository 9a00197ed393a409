"""`coral2-pipeline status` names, at once, the Workflows whose Teardown DWS refused (left
for the operator, their jobs' epilogs released), and points to the runbook."""

from __future__ import annotations

import time

from pipeline.store import JobRecord, Store
from tests.cli.status_helpers import Status, as_json
from tests.cli.test_status_flags_a_job_waiting_on_dws_past_its_timeout import lead


def test_a_refused_teardown_is_a_warning_naming_its_workflow(status: Status, aimed: Store) -> None:
    lead(aimed)
    refused = JobRecord(jobid=12, state="Teardown:Error", observed_at=time.time() - 5)
    aimed.jobs.create(refused)
    code, report = as_json(status)
    assert (code, report["status"]) == (1, "WARNING")
    [flag] = report["flags"]
    assert "1 Workflow(s) in Teardown with an Error DWS will not clear (e.g. fluxjob-12)" in flag
    assert "A Teardown DWS refuses" in flag

"""A move to Teardown that meets a resourceVersion conflict on every attempt — DWS and
nnf writing the Workflow's status under the patch, as the real ones do in a busy
Proposal — is tried again later, never taken as done: the record's mark that Teardown
was asked follows the patch, or the Workflow would stay in Proposal and the job's epilog
wait for good (the real-DWS tier's cancelled job, under load)."""

from __future__ import annotations

import pytest
from celery import Celery
from celery.exceptions import Retry
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.model.job import Teardown
from tests.tasks.test_setup_fills_servers_from_what_the_proposal_observe_saved import (
    app,
    recorded_at_proposal,
    store_of,
)

__all__ = ["app"]  # the fixture


def test_a_conflicted_teardown_is_retried_and_then_asked(
    app: Celery, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    server, dws = kube
    store = store_of(app)
    recorded_at_proposal(dws, store, 70)
    server.inject(code=409, method="PATCH", times=20, path="/workflows/fluxjob-70")
    with pytest.raises(Retry):
        app.tasks["dws.post_run"].apply(kwargs={"jobid": 70, "run_started": False}, throw=True)
    assert dws.get_workflow("fluxjob-70")["spec"]["desiredState"] == "Proposal"
    record = store.jobs.get(70)
    assert record is not None and record.teardown == Teardown.NOT_ASKED
    server.routes.faults.clear()
    app.tasks["dws.post_run"].apply(kwargs={"jobid": 70, "run_started": False}, throw=True)
    assert dws.get_workflow("fluxjob-70")["spec"]["desiredState"] == "Teardown"
    record = store.jobs.get(70)
    assert record is not None and record.teardown == Teardown.ASKED

"""The bridge's dws.* service answers as coral2_dws, through the real hooks and store."""

from __future__ import annotations

from typing import Any

from pipeline.model.job import JobRecord, Teardown
from pipeline.services.bridge.service import serve
from pipeline.services.hooks import Hooks
from pipeline.settings import load_settings
from pipeline.store import Store


def hooks(sent: list[tuple[str, dict[str, Any]]]) -> Hooks:
    return Hooks(load_settings(env={}), lambda n, kw: sent.append((n, kw)), owner_uid=0)


def test_status_lists_the_jobs_whose_workflow_is_still_tracked(store: Store) -> None:
    store.jobs.create(JobRecord(jobid=11))
    store.jobs.create(JobRecord(jobid=12, teardown=Teardown.DELETED))
    assert serve(hooks([]), store, "dws.status", None) == {"success": True, "workflows": [11]}


def test_a_valid_request_is_accepted_and_enqueued(store: Store) -> None:
    sent: list[tuple[str, dict[str, Any]]] = []
    answer = serve(hooks(sent), store, "dws.teardown", {"jobid": 5})
    assert answer == {"success": True}
    assert sent == [("dws.teardown", {"jobid": 5})]


def test_a_malformed_request_is_refused_with_errstr_and_enqueues_nothing(store: Store) -> None:
    sent: list[tuple[str, dict[str, Any]]] = []
    answer = serve(hooks(sent), store, "dws.create", ["not", "an", "object"])
    assert answer["success"] is False
    assert "malformed dws.create payload" in answer["errstr"]
    assert sent == []

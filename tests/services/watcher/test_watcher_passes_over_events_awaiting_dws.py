"""The watcher passes over Workflow events that only show DWS still to take up a new
desiredState (our own patch) — noting their resourceVersion all the same — and observes
every event that could change a decision."""

from __future__ import annotations

import time
from typing import Any

import pytest

from pipeline.clients.k8s import DwsClient
from pipeline.clients.kube import WatchEvent
from pipeline.services.watcher import Watcher, awaits_dws
from pipeline.store import Store
from tests.services.watcher.test_watcher import Recorder, running, wait_for


def event(desired: str, status: dict[str, Any] | None, **meta: Any) -> WatchEvent:
    obj: dict[str, Any] = {"metadata": {"name": "fluxjob-1", **meta}}
    obj["spec"] = {"desiredState": desired}
    if status is not None:
        obj["status"] = status
    return WatchEvent("MODIFIED", obj)


def test_our_patch_not_yet_taken_up_by_dws_awaits_dws() -> None:
    assert awaits_dws(event("DataIn", {"state": "Setup", "ready": True, "status": "Completed"}))


@pytest.mark.parametrize(
    ("what", "ev"),
    [
        ("the new state reported", event("DataIn", {"state": "DataIn", "ready": False})),
        ("the state ready", event("DataIn", {"state": "DataIn", "ready": True})),
        ("no status yet", event("Proposal", None)),
        ("an error", event("Teardown", {"state": "PreRun", "status": "Error"})),
        (
            "a transient condition",
            event("DataIn", {"state": "Setup", "status": "TransientCondition"}),
        ),
        (
            "a deletion",
            event("Teardown", {"state": "Setup"}, deletionTimestamp="2026-01-01T00:00:00Z"),
        ),
    ],
)
def test_events_that_can_change_a_decision_are_observed(what: str, ev: WatchEvent) -> None:
    assert not awaits_dws(ev), what


def test_added_and_deleted_events_are_always_observed() -> None:
    obj = event("DataIn", {"state": "Setup", "ready": True}).object
    assert not awaits_dws(WatchEvent("ADDED", obj))
    assert not awaits_dws(WatchEvent("DELETED", obj))


def seen(store: Store, jobid: int, rv: str) -> None:
    """Wait until the watcher noted job ``jobid``'s event of ``rv``: proof it handled it."""
    key, field = store.keys.workflow_seen, str(jobid)
    deadline = time.monotonic() + 60
    while not (store.client.hget(key, field) or b"").decode().startswith(f"{rv} "):
        assert time.monotonic() < deadline, f"the watcher never handled job {jobid}'s rv {rv}"
        time.sleep(0.01)


def test_the_watcher_enqueues_nothing_for_a_patch_until_dws_reports_the_new_state(
    store: Store, dws: DwsClient
) -> None:
    dws.create_workflow({"metadata": {"name": "fluxjob-5"}, "spec": {"desiredState": "Setup"}})
    status = {"state": "Setup", "ready": True, "status": "Completed"}
    dws.patch("workflows", "fluxjob-5", {"status": status})
    rec = Recorder()
    with running(Watcher(store, dws, rec, lease_s=1.0)):
        wait_for(lambda: rec.jobs() == [5], "the initial list's observe")
        store.client.delete(store.keys.observe_pending(5))
        patched = dws.patch("workflows", "fluxjob-5", {"spec": {"desiredState": "DataIn"}})
        seen(store, 5, patched["metadata"]["resourceVersion"])  # the watcher handled it
        assert rec.jobs() == [5]
        noted = store.client.hget(store.keys.workflow_seen, "5")  # for dws.resync to compare
        assert (
            noted is not None
            and noted.split()[0].decode() == patched["metadata"]["resourceVersion"]
        )
        taken_up = {"state": "DataIn", "ready": False, "status": "DriverWait"}
        dws.patch("workflows", "fluxjob-5", {"status": taken_up})
        wait_for(lambda: rec.jobs() == [5, 5], "the observe of DWS's status update")

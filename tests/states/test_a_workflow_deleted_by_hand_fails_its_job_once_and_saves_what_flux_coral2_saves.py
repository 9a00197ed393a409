"""A Workflow deleted by hand while its job used it (in PreRun here): the job gets one
fatal exception naming the Workflow and saying how it went, what flux-coral2 saves of a
Workflow at Teardown is saved (the Workflow and the state's timing in the job's KVS), no
state is asked of it (a deleting Workflow moves no more), and Flux's finalizer goes. A
Workflow that names itself in no metadata is named by its job."""

from __future__ import annotations

from pipeline.states.actions import PatchDesiredState, RemoveFinalizer, SendOnce
from pipeline.states.observed import deleted_by_hand
from tests.states.factory import job, settings, snapshot

NOTE = (
    "DWS workflow interactions failed: workflow fluxjob-42 was deleted "
    "(metadata.deletionTimestamp set) while the job used it"
)


def test_the_job_fails_once_the_workflow_is_saved_and_the_finalizer_goes() -> None:
    shot = snapshot("PreRun", elapsed="3s")
    shot.workflow["metadata"]["deletionTimestamp"] = "2026-12-06T09:00:00Z"
    actions = deleted_by_hand(shot, job(), settings())
    assert actions[0] == SendOnce(
        "exception",
        {"id": 42, "type": "exception", "severity": 0, "note": NOTE},
        "exception:workflow-deleted",
    )
    puts = {a.payload["key"]: a.payload for a in actions if isinstance(a, SendOnce)
            and a.kind == "kvs-put"}  # fmt: skip
    assert puts["rabbit_workflow"]["id"] == 42
    assert puts["rabbit_prerun_timing"]["value"] == "3s"
    assert not [a for a in actions if isinstance(a, PatchDesiredState)]
    assert actions[-1] == RemoveFinalizer()


def test_a_workflow_without_metadata_is_named_by_its_job() -> None:
    shot = snapshot("PreRun")
    del shot.workflow["metadata"]
    [raised, *_] = deleted_by_hand(shot, job(), settings())
    assert isinstance(raised, SendOnce) and raised.payload["note"] == NOTE

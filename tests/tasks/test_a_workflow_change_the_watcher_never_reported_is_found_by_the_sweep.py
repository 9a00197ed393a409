"""housekeeping.stale_sweep lists every Workflow: a tracked job's listed version that
neither the watcher reported nor an observe read is noted as the watcher would have noted
it, so that dws.resync observes it as it does a lost observe. A version an observe already
read is left alone, and a newer note the watcher wrote after the sweep read the notes is
never overwritten by the list's older version."""

from __future__ import annotations

import time
from typing import Any

from celery import Celery
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.model.workflow import WLM_FINALIZER
from pipeline.store import JobRecord, Store
from pipeline.store.jobs import parse_notes
from pipeline.store.resync import LOST_AFTER_S


def workflow(dws: DwsClient, jobid: int) -> dict[str, Any]:
    meta = {"name": f"fluxjob-{jobid}", "finalizers": [WLM_FINALIZER]}
    dws.create_workflow({"metadata": meta, "spec": {"desiredState": "Proposal"}})
    return dws.get_workflow(f"fluxjob-{jobid}")


def track(store: Store, jobid: int, observed_rv: str, seen_rv: str) -> None:
    store.jobs.create(
        JobRecord(
            jobid=jobid, workflow=f"fluxjob-{jobid}", observed_rv=observed_rv, observed_at=1.0
        )
    )
    store.client.hset(store.keys.workflow_seen, str(jobid), f"{seen_rv} 1.000")
    store.flux_jobs.synced([jobid], time.time())  # running: the sweep keeps its Workflow


def test_an_unreported_version_is_noted_and_a_read_one_is_left_alone(
    app: Celery, store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    dws = kube[1]
    missed, read = workflow(dws, 81), workflow(dws, 82)
    track(store, 81, observed_rv="0", seen_rv="0")  # the watcher never saw its creation
    track(store, 82, observed_rv=read["metadata"]["resourceVersion"], seen_rv="0")
    before = time.time()
    app.tasks["housekeeping.stale_sweep"].apply().get()
    notes = parse_notes(store.watch.seen())
    rv, at = notes[81]
    # the note keeps milliseconds, rounded: it may read up to half of one before ``before``
    assert rv == missed["metadata"]["resourceVersion"] and at >= before - 0.0005
    assert notes[82] == ("0", 1.0)  # its observe read the listed version already


def test_a_newer_note_of_the_watcher_is_never_overwritten(store: Store) -> None:
    store.client.hset(store.keys.workflow_seen, "83", "12 5.000")  # after the sweep's read
    noted = store.watch.note_missed([(83, b"10 4.000", "11 6.000"), (84, b"", "3 6.000")], 6.0)
    assert noted == 1
    assert parse_notes(store.watch.seen()) == {83: ("12", 5.0), 84: ("3", 6.0)}
    # dws.resync looks at the note it wrote when an observe should have read it
    assert store.client.zscore(store.keys.resync_due, "84") == 6.0 + LOST_AFTER_S
    assert store.client.zscore(store.keys.resync_due, "83") is None

"""Periodic sweeps of what no event drives: DWS's SystemStatus, stale Workflows, the
resource eventlog's size.

* ``systemstatus.sync`` follows the resource journal (online, offline,
  undrain) into SystemStatus ``default``, as flux-coral2's SystemStatusManager
  does (:mod:`pipeline.states.systemstatus`).
* ``housekeeping.stale_sweep`` sends each ``fluxjob-*`` Workflow whose job Flux
  no longer runs to Teardown and deletes it (:mod:`pipeline.states.stale`),
  reports the Servers allocations and ClientMounts it held, ends the record of
  such a job, compacts the resource eventlog past its bound, and catches the
  Workflow changes the watcher never reported.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from pipeline.errors import NotFound
from pipeline.model.workflow import jobid_of_workflow as jobid_of
from pipeline.perform.reads import clientmounts_not_in_state, rabbits_with_allocations
from pipeline.platform.task import PipelineTask, pipeline_task
from pipeline.states.stale import Step, on_ended, on_stale, stale_since, step
from pipeline.states.systemstatus import follow
from pipeline.store.jobs import parse_notes
from pipeline.tasks.dws import act
from pipeline.tasks.observe import seen_entry

log = logging.getLogger("coral2_pipeline.sweeps")

#: Journal events one sync reads at most (the rest wait for the next).
SYNC_BATCH = 10_000


@pipeline_task("systemstatus.sync", queue="housekeeping", max_attempts=3)
def systemstatus_sync(task: PipelineTask) -> int:
    """Patch SystemStatus ``default`` with what the resource journal says; return how
    many hosts changed. Beat runs it every 2 s.

    Newly online hosts are Enabled, offline ones Disabled; hosts our drains
    for unmount failures disabled stay Disabled until their ``undrain``. The
    patch goes first, the journal position after: a run killed in between
    patches the same again, which changes nothing.
    """
    sync = task.store.systemstatus
    cursor, seen = sync.load()
    cursor_after, events = task.store.resource_log.since(cursor, limit=SYNC_BATCH)
    patch, undrained, seen = follow(events, seen)
    if patch:
        try:
            task.dws.patch_system_status({"data": {"nodes": patch}})
        except NotFound:  # nnf tolerates its absence, and so do we: status says so
            log.debug("no SystemStatus default: nothing to patch")
            sync.note_missing(True)
        else:
            sync.note_missing(False)
    sync.save(cursor_after, seen, undrained)
    return len(patch)


def _missed(
    workflows: list[dict[str, Any]],
    seen: dict[bytes, bytes],
    observed: dict[int, tuple[str, float]],
    now: float,
) -> list[tuple[int, bytes, str]]:
    """The tracked jobs whose listed Workflow version neither the watcher's latest note
    nor their last observe has: ``(jobid, the note as read, the listed version's note)``."""
    notes = parse_notes(seen)
    missed = []
    for workflow in workflows:
        jobid = jobid_of(str((workflow.get("metadata") or {}).get("name", "")))
        if jobid is None or jobid not in observed:
            continue
        rv = str(workflow["metadata"].get("resourceVersion", ""))
        if rv not in (notes.get(jobid, ("", 0.0))[0], observed[jobid][0]):
            missed.append((jobid, seen.get(str(jobid).encode(), b""), seen_entry(workflow, now)))
    return missed


def _clear(task: PipelineTask, name: str, jobid: int, what: Step) -> None:
    """Send stale Workflow ``name`` to Teardown, or delete it (``what``), saying so."""
    if what is Step.TEARDOWN:
        held = rabbits_with_allocations(task.dws, name)
        mounts = clientmounts_not_in_state(task.dws, name, "unmounted")
        log.warning(
            "stale Workflow %s: job %s is not running in Flux; Teardown (Servers "
            "allocations on %s, ClientMounts still mounted on %s)",
            name,
            jobid,
            ", ".join(held) or "no rabbit",
            ", ".join(sorted(mounts)) or "no compute",
            extra={"jobid": jobid},
        )
    act(task, jobid, on_stale(what))
    if what is Step.DELETE:
        log.warning("stale Workflow %s deleted", name, extra={"jobid": jobid})


@pipeline_task("housekeeping.stale_sweep", queue="housekeeping", max_attempts=3)
def stale_sweep(task: PipelineTask) -> dict[str, int]:
    """Tear down and delete ``fluxjob-*`` Workflows whose job Flux no longer runs; return
    counts by step. Beat runs it every 60 s.

    A Workflow is stale ``pipeline.stale_after`` seconds after its job became
    INACTIVE in Flux's events journal (or, for a job the journal never listed
    and the pipeline has no record of, after a backlog read that came later
    than the Workflow). Each run also ends the records of jobs Flux finished
    (they expire after ``pipeline.retention``), compacts the resource
    eventlog once it holds more than ``pipeline.resource_eventlog_compact_at``
    events, and notes each tracked job's listed Workflow version that neither
    the watcher reported nor an observe read, so that ``dws.resync`` observes
    it: a change the watch never delivered costs a minute, not the job.
    """
    settings = task.settings.pipeline
    now = time.time()
    jobs, synced = task.store.flux_jobs.view()
    seen = task.store.watch.seen()  # before the list: what the list shows is newer or equal
    counts = {s.value: 0 for s in Step}
    observed = task.store.jobs.observed()
    tracked = set(observed)
    missed = 0
    for workflows, _ in task.dws.list_pages("workflows"):  # a chunk in memory at a time
        missed += task.store.watch.note_missed(_missed(workflows, seen, observed, now), now)
        for workflow in workflows:
            name = str((workflow.get("metadata") or {}).get("name", ""))
            jobid = jobid_of(name)
            if jobid is None:
                continue
            since = stale_since(workflow, jobs.get(jobid), jobid in jobs, synced, jobid in tracked)
            what = step(workflow, since, now, settings.stale_after)
            counts[what.value] += 1
            if what in (Step.TEARDOWN, Step.DELETE):
                _clear(task, name, jobid, what)
    if missed:
        log.warning("%d Workflow change(s) the watcher never reported: observing them", missed)
    ended = [j for j, at in jobs.items() if at is not None]
    for jobid in ended:
        finish = on_ended(jobid in tracked, jobs[jobid], now, settings.stale_after)
        if finish:
            act(task, jobid, finish)
    old = [j for j in ended if now - (jobs[j] or now) > settings.retention]
    task.store.flux_jobs.forget(old)
    eventlog = task.store.resource_log
    if eventlog.length() > settings.resource_eventlog_compact_at:
        before, after = eventlog.compact()
        log.warning("resource eventlog compacted: %d events → %d", before, after)
    return counts

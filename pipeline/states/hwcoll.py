"""Hardware collectives around a job: what the pipeline does with its reservation.

* At RUN (``job.run``): an eligible job is reserved multicast addresses; the
  ``hwcoll`` event says what it got (or why it got none: a reservation that
  is slow or fails is not fatal, the job runs without hardware collectives),
  and its KVS key ``hwcoll_environment`` holds the libfabric environment.
* At CLEANUP: ``hwcoll.release`` deletes the job step's multicast trees and
  the reservation, with retries, while the job goes on to INACTIVE.
* A reservation that vanished from the fabric manager while its job runs
  fails the job, saying so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from pipeline.model.hwcoll import Reservation
from pipeline.model.job import JobRecord
from pipeline.states.actions import (
    Action,
    MarkDone,
    ReleaseMulticast,
    SendOnce,
    SendTask,
    exception,
    kvs_put,
)

EVENT = "hwcoll"
ENV_KEY = "hwcoll_environment"


def _event(jobid: int, context: dict[str, object]) -> SendOnce:
    payload = {"id": jobid, "name": EVENT, "context": context}
    return SendOnce("event-post", payload, f"event:{EVENT}")


def posts(jobid: int, reservation: Reservation, env: dict[str, str]) -> list[Action]:
    """The job holds its reservation: put the environment in the KVS, then post the event
    (an application that waited for the event finds the environment there); each once."""
    context: dict[str, object] = {
        "jobID": reservation.fm_job_id,
        "mcastLimit": reservation.mcast_limit,
        "step": reservation.step,
    }
    return [kvs_put(jobid, ENV_KEY, env), _event(jobid, context)]


def on_unavailable(jobid: int, reason: str) -> list[Action]:
    """No reservation (the fabric manager is slow, down or refused): the job runs without
    hardware collectives, and its ``hwcoll`` event says why."""
    return [_event(jobid, {"jobID": None, "reason": f"hardware collectives off: {reason}"})]


def on_vanished(jobid: int, reservation: Reservation) -> list[Action]:
    """The fabric manager lost the running job's reservation: fail the job, saying so."""
    note = (
        f"hardware collective reservation {reservation.fm_job_id} vanished from the fabric manager"
    )
    return [exception(jobid, EVENT, 0, note, "exception:hwcoll-vanished")]


def on_cleanup(job: JobRecord) -> list[Action]:
    """The job reached CLEANUP: its reservation, if it holds one, is released by
    ``hwcoll.release`` (nothing waits for it), sent before the job is marked finished."""
    if job.hwcoll is None or job.hwcoll.released:
        return []
    return [SendTask("hwcoll.release", {"jobid": job.jobid})]


def on_release(job: JobRecord | None) -> list[Action]:
    """``hwcoll.release``: delete the job step's multicast trees, then the reservation, and
    mark it released (nothing when there is none, or it is released already)."""
    if job is None or job.hwcoll is None or job.hwcoll.released:
        return []
    kept = job.hwcoll
    return [
        ReleaseMulticast(kept.fm_job_id, kept.step),
        MarkDone({"hwcoll": kept.model_copy(update={"released": True})}),
    ]


@dataclass(frozen=True)
class Reconciled:
    """What ``hwcoll.reconcile`` does: each job's actions, and how many reservations it
    releases, finds vanished, and keeps."""

    actions: dict[int, list[Action]]
    released: int
    vanished: int
    kept: int


def reconcile(
    held: Iterable[str],
    records: Mapping[int, JobRecord],
    running: Mapping[int, float | None],
    synced: bool,
    jobid_of: Callable[[str], int | None],
    cleaning: AbstractSet[int],
) -> Reconciled:
    """Release our reservations (``held`` at the fabric manager; ``jobid_of`` reads ours)
    whose job is INACTIVE (``running``: Flux's view, jobid → its end or None while it
    runs) or unknown to Flux (when its view is ``synced``) and to the pipeline; fail a
    running job whose reservation vanished, unless its CLEANUP began (``cleaning``: the
    release may be under way). The records were read before the list: a reservation a
    record holds was made before the record was written, so one missing from the list
    read after it is gone."""
    actions: dict[int, list[Action]] = {}
    held = set(held)
    released = kept = vanished = 0
    for fm_id in sorted(held):
        jobid = jobid_of(fm_id)
        if jobid is None:
            continue  # another cluster's, or not one of ours
        ended = jobid in running and running[jobid] is not None
        unknown = jobid not in running and synced and jobid not in records
        if ended or unknown:
            actions.setdefault(jobid, []).append(ReleaseMulticast(fm_id))
            released += 1
        else:
            kept += 1
    for jobid, record in records.items():
        reservation = record.hwcoll
        if reservation is None or reservation.released or reservation.fm_job_id in held:
            continue
        if jobid not in running or running[jobid] is not None or jobid in cleaning:
            continue  # not running, or its CLEANUP began
        actions.setdefault(jobid, []).extend(on_vanished(jobid, reservation))
        vanished += 1
    return Reconciled(actions, released, vanished, kept)

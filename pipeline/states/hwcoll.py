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

from pipeline.model.hwcoll import Reservation
from pipeline.model.job import JobRecord
from pipeline.states.actions import (
    Action,
    MarkDone,
    SendOnce,
    SendTask,
    UpdateJob,
    exception,
    kvs_put,
)

EVENT = "hwcoll"
ENV_KEY = "hwcoll_environment"


def _event(jobid: int, context: dict[str, object]) -> SendOnce:
    payload = {"id": jobid, "name": EVENT, "context": context}
    return SendOnce("event-post", payload, f"event:{EVENT}")


def on_reserved(jobid: int, reservation: Reservation, env: dict[str, str]) -> list[Action]:
    """The reservation is made: keep it, put the environment in the KVS, then post the event
    (an application that waited for the event finds the environment there)."""
    context: dict[str, object] = {
        "jobID": reservation.fm_job_id,
        "mcastLimit": reservation.mcast_limit,
        "step": reservation.step,
    }
    return [
        UpdateJob({"hwcoll": reservation}),
        kvs_put(jobid, ENV_KEY, env),
        _event(jobid, context),
    ]


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


def on_released(reservation: Reservation) -> list[Action]:
    """The reservation and its trees are gone from the fabric manager."""
    return [MarkDone({"hwcoll": reservation.model_copy(update={"released": True})})]

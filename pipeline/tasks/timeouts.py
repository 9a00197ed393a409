"""Deadline tasks: the 1-second sweep and the firing of one deadline.

A deadline is armed by writing its token into the job record
(``deadlines[kind] = token``) and adding it to the sorted set; it is
disarmed by replacing or removing the token. :func:`fire` acts only when
the record still holds the same token, so a deadline whose job moved on —
or that a duplicate sweep delivered twice — does nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from pipeline.errors import PermanentError
from pipeline.model.job import DeadlineKind
from pipeline.perform.deadlines import disarm
from pipeline.platform.sending import reprs
from pipeline.platform.task import PipelineTask, pipeline_task
from pipeline.store import Deadline, JobRecord
from pipeline.store.backlog import SENT_HEADER
from pipeline.store.deadlines import noted_id

log = logging.getLogger("coral2_pipeline.timeouts")

#: kind → handler(task, record, deadline); filled by the modules owning each kind.
#: The task gives the handler its store, DWS client and app configuration.
Handler = Callable[[PipelineTask, JobRecord, Deadline], None]
HANDLERS: dict[str, Handler] = {}

FIRE = "timeouts.fire"


def handles(kind: DeadlineKind) -> Callable[[Handler], Handler]:
    """Register the handler of deadline ``kind`` (one per kind, checked at import)."""

    def register(handler: Handler) -> Handler:
        if kind in HANDLERS:
            raise ValueError(f"deadline kind {kind!r} already has a handler")
        HANDLERS[kind] = handler
        return handler

    return register


@pipeline_task("timeouts.sweep", queue="timeouts", max_attempts=3)
def sweep(task: PipelineTask, limit: int = 500) -> int:
    """Claim due deadlines and send one ``timeouts.fire`` each; return how many.

    Enqueued every second by beat (``beat_schedules/schedule.py``). A clock
    step first moves every deadline with it (:mod:`pipeline.store.clock`), so a step
    forward fails no job and a step back delays none. The claim notes each
    ``timeouts.fire`` message in the ledger in the same Redis step, so a sweep killed
    before it sends them loses none: ``housekeeping.redeliver`` sends them later.
    """
    store = task.store
    resend_after_s = task.settings.pipeline.resend_after
    now = time.time()
    moved, due = store.deadlines.sweep(
        now, limit=limit, note_as=FIRE, resend_after_s=resend_after_s
    )
    if moved:
        log.warning(
            "the clock moved %+.1f s since the store last saw it (a clock step, or the "
            "pipeline was not running): every deadline and resend moved with it",
            moved,
        )
    for deadline in due:
        kwargs = {
            "jobid": deadline.jobid,
            "kind": deadline.kind,
            "token": deadline.token,
            "due": deadline.due,
        }
        task.app.tasks[FIRE].apply_async(
            kwargs=kwargs,
            task_id=noted_id(FIRE, deadline),
            headers={SENT_HEADER: now},  # as the sweep noted it in the ledger
            **reprs(kwargs),
        )
    return len(due)


@pipeline_task(FIRE, queue="timeouts", lock_job=True)
def fire(task: PipelineTask, jobid: int, kind: str, token: str, due: float) -> bool:
    """Run the handler of one due deadline unless it is stale; return whether it ran.

    Enqueued by ``timeouts.sweep``. Holds the job's lock.
    """
    store = task.store
    record = store.jobs.latest(jobid)
    if record is None or record.deadlines.get(kind) != token:
        log.info("deadline %s of job %s is stale; ignored", kind, jobid)
        return False
    handler = HANDLERS.get(kind)
    if handler is None:
        raise PermanentError(f"no handler for deadline kind {kind!r} (job {jobid})")
    handler(task, record, Deadline(jobid, kind, token, due))
    after = store.jobs.latest(jobid)
    if after is not None and after.deadlines.get(kind) == token:  # else re-armed meanwhile
        disarm(store, jobid, kind)
    return True

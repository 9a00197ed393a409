"""Housekeeping tasks that are not tied to one job's lifecycle."""

from __future__ import annotations

import logging
import time

from pipeline.platform.task import PipelineTask, pipeline_task, send

log = logging.getLogger("coral2_pipeline.housekeeping")


@pipeline_task("housekeeping.ping", queue="housekeeping", max_attempts=3, keep_result=True)
def ping(task: PipelineTask, token: str) -> str:
    """Echo ``token``; used by ``coral2-pipeline`` health checks and the benchmark ceiling.

    Enqueued by operators and benchmarks, who wait for its result; does no work.
    """
    return token


@pipeline_task("housekeeping.heartbeat", queue="housekeeping", max_attempts=3)
def heartbeat(task: PipelineTask, queue: str) -> None:
    """A worker took this from ``queue``: note when. Beat sends one to each queue every
    10 s; ``coral2-pipeline status`` flags a queue whose latest is old (no worker serves
    it, or every worker is stuck)."""
    task.store.runs.alive(queue, time.time())


@pipeline_task("housekeeping.redeliver", queue="housekeeping", max_attempts=3)
def redeliver(task: PipelineTask) -> int:
    """Send again each ledger entry whose task has had no outcome for its wait; return how many.

    Beat runs it every 5 s (``beat_schedules/schedule.py``). The first wait
    is ``pipeline.resend_after``; each later one is the entry's age, so the
    sends of a message that keeps failing double apart (at most
    ``pipeline.resend_cap``).
    The entry is postponed before the message goes out: a redeliver killed
    in between leaves it due, never lost. A duplicate of a message that was
    only slow is an idempotent no-op.
    """
    ledger = task.store.ledger
    resend_after_s = task.settings.pipeline.resend_after
    cap_s = task.settings.pipeline.resend_cap
    now = time.time()
    sent = 0
    node_prefix = task.settings.pipeline.queues.node_prefix
    for entry in ledger.due(now):
        on_node = (entry.queue or "").startswith(node_prefix)
        if entry.name not in task.app.tasks and not on_node:
            log.error("ledger entry %s names unknown task %r; dropped", entry.task_id, entry.name)
            ledger.done(entry.task_id)
            continue
        ledger.postpone(entry.task_id, now + entry.next_wait(now, resend_after_s, cap_s), now)
        send(task.app, entry.name, entry.kwargs, entry.task_id, entry.queue)
        log.warning(
            "%s (task %s) has no outcome %.0f s after it was sent; sent again",
            entry.name,
            entry.task_id,
            now - entry.first_sent,
            extra={"jobid": entry.kwargs.get("jobid"), "task": entry.name},
        )
        sent += 1
    return sent

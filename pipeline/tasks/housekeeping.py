"""Housekeeping tasks that are not tied to one job's lifecycle."""

from __future__ import annotations

import logging
import time

from pipeline.model.hostlist import encode_hostlist
from pipeline.platform import fanout, worker_beat  # noqa: F401  (worker_beat: its signals)
from pipeline.platform.sending import resend_copies, send
from pipeline.platform.task import PipelineTask, pipeline_task
from pipeline.store import backlog
from pipeline.store.ledger import Entry
from pipeline.store.workers import DEAD_AFTER_S

log = logging.getLogger("coral2_pipeline.housekeeping")

#: How many due ledger entries one ``housekeeping.redeliver`` sends again at most: a
#: whole-machine job's lost copies go out in a few runs, a manifest a run.
REDELIVER_BATCH = 5000


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
    only slow is an idempotent no-op. A message still waiting in its queue
    (:mod:`pipeline.store.backlog`) is not sent again, but looked at again
    ``resend_after`` later: workers that fall behind are not sent more. The due
    copies of one manifest (a job's node task on many nodes) go out as that
    manifest again, signed once for their nodes, with one line in the log.
    """
    ledger = task.store.ledger
    resend_after_s = task.settings.pipeline.resend_after
    cap_s = task.settings.pipeline.resend_cap
    now = time.time()
    sent = 0
    node_prefix = task.settings.pipeline.queues.node_prefix
    copies: dict[str, list[Entry]] = {}  # manifest id → its due copies
    generation = task.store.generation()
    if generation is not None and (made := ledger.all_due_after_a_loss(generation, now)):
        log.warning("Redis restarted or lost writes: %d sent task(s) looked at again now", made)
    due = ledger.due(now, limit=REDELIVER_BATCH)
    due_ids = {entry.task_id for entry in due}
    due += [e for e in _of_dead_workers(task, now) if e.task_id not in due_ids]
    for entry in _not_waiting(task, due, now):
        on_node = (entry.queue or "").startswith(node_prefix)
        if entry.name not in task.app.tasks and not on_node:
            log.error("ledger entry %s names unknown task %r; dropped", entry.task_id, entry.name)
            ledger.done(entry.task_id)
            continue
        hostname = str(entry.kwargs.get("hostname", ""))
        manifest_id = fanout.manifest_of(entry.task_id, hostname) if on_node else None
        if manifest_id is not None and entry.queue == node_prefix + hostname:
            copies.setdefault(manifest_id, []).append(entry)
            continue
        ledger.postpone(entry.task_id, now + entry.next_wait(now, resend_after_s, cap_s), now)
        send(
            task.app,
            entry.name,
            entry.kwargs,
            entry.task_id,
            entry.queue,
            first_sent=entry.first_sent,
            resent=True,
        )
        log.warning(
            "%s (task %s) has no outcome %.0f s after it was sent; sent again",
            entry.name,
            entry.task_id,
            now - entry.first_sent,
            extra={"jobid": entry.kwargs.get("jobid"), "task": entry.name},
        )
        sent += 1
    if copies:
        sent += _resend_copies(task, copies, now)
    return sent


def _of_dead_workers(task: PipelineTask, now: float) -> list[Entry]:
    """The messages a worker killed outright took with it (``pipeline.store.workers``): of
    its queues, first sent before it was found silent. Those still waiting in their queue are
    left there by :func:`_not_waiting`; a copy of one another worker still runs is an
    idempotent no-op."""
    dead = task.store.workers.dead(now)
    if not dead:
        return []
    queues = {q for beat in dead for q in beat.queues}
    last = max(beat.at for beat in dead)
    # it died after its last beat, before it was due to beat again: whatever was sent up to
    # when it was found silent may be in its hands (a later one, in another's: a copy)
    until = min(now, last + DEAD_AFTER_S)
    resend_after_s = task.settings.pipeline.resend_after
    early = [
        entry
        for entry in task.store.ledger.due(until + resend_after_s, limit=REDELIVER_BATCH)
        if _queue_of(task, entry) in queues and entry.first_sent <= until
    ]
    log.warning(
        "worker(s) %s silent since %.0f s ago: %d message(s) of theirs sent again now",
        ", ".join(sorted(beat.worker for beat in dead)),
        now - last,
        len(early),
    )
    task.store.workers.forget(dead)
    return early


def _not_waiting(task: PipelineTask, due: list[Entry], now: float) -> list[Entry]:
    """The ``due`` entries whose message no longer waits in its queue. The others (first
    sent no earlier than the oldest message their queue holds) are looked at again
    ``resend_after`` from now, with one line in the log a queue."""
    queue_of = {entry.task_id: _queue_of(task, entry) for entry in due}
    oldest, wrong = backlog.oldest_waiting(task.store.client, filter(None, queue_of.values()))
    prefix = task.settings.pipeline.queues.node_prefix
    for bad in wrong:
        _set_aside_queue(task, bad, prefix, now)
    waiting: dict[str, list[Entry]] = {}
    out = []
    for entry in due:
        queue = queue_of[entry.task_id]
        if queue in oldest and entry.first_sent >= oldest[queue]:
            waiting.setdefault(queue, []).append(entry)
        else:
            out.append(entry)
    later = now + task.settings.pipeline.resend_after
    task.store.ledger.postpone_all([(e.task_id, later) for q in waiting.values() for e in q], now)
    for queue, entries in waiting.items():
        log.warning(
            "%d message(s) on %s have had no outcome for %.0f s or more and still wait there, "
            "behind its oldest message (first sent %.0f s ago): the workers are behind; "
            "not sent again",
            len(entries),
            queue,
            now - max(e.first_sent for e in entries),
            now - oldest[queue],
            extra={"queue": queue},
        )
    return out


def _set_aside_queue(task: PipelineTask, queue: str, prefix: str, now: float) -> None:
    """``queue`` is not a list, so it holds no message: delete it (its messages sent again
    make it anew), and, for a node's queue, flag the node and say it in a dead letter. It
    costs that queue alone: the other queues' lost copies go out in this same pass."""
    kind = task.store.answers.set_aside_key(queue)
    why = f"its task queue {queue} was a {kind}, not a list: deleted, its tasks sent again"
    log.error("%s", why)
    if queue.startswith(prefix):
        host = queue.removeprefix(prefix)
        task.store.answers.flag(host, why, now)
        task.store.dead_letters.add(f"{host}:{queue}", "", why)


def _queue_of(task: PipelineTask, entry: Entry) -> str | None:
    """The queue an entry's message was sent to: its own, or its task's."""
    if entry.queue:
        return entry.queue
    logical = getattr(task.app.tasks.get(entry.name), "logical_queue", None)
    return getattr(task.settings.pipeline.queues, logical, None) if logical else None


def _resend_copies(task: PipelineTask, due: dict[str, list[Entry]], now: float) -> int:
    """Send again the due copies of each manifest: postponed first, then that manifest
    again for their nodes; one line in the log a manifest."""
    settings = task.settings.pipeline
    entries = [entry for copies in due.values() for entry in copies]
    waits = [
        (e.task_id, now + e.next_wait(now, settings.resend_after, settings.resend_cap))
        for e in entries
    ]
    task.store.ledger.postpone_all(waits, now)
    groups: list[tuple[str, fanout.Group, float]] = []
    for manifest_id, copies in due.items():
        sends = [(str(e.kwargs["hostname"]), e.name, e.kwargs) for e in copies]
        first_sent = min(e.first_sent for e in copies)
        groups += [(manifest_id, group, first_sent) for group in fanout.grouped(sends)]
    resend_copies(task.app, groups)
    for manifest_id, group, first_sent in groups:
        log.warning(
            "%s on %d node(s) %s (manifest %s) has no outcome %.0f s after it was sent; sent again",
            group.name,
            len(group.hosts),
            encode_hostlist(group.hosts),
            manifest_id,
            now - first_sent,
            extra={"jobid": group.kwargs.get("jobid"), "task": group.name},
        )
    return len(entries)

"""Node answers read off their stream in batches and counted a batch at a time.

Every lifecycle worker (a Celery worker consuming the lifecycle queue) runs one
:class:`AnswerReader` thread beside its consumer, started when the worker is
ready and stopped with it. It reads up to :data:`BATCH` answers at a time from
``<prefix>:answers`` (``pipeline.platform.answers``), verifies each as the
consumer verifies a task message, and counts them:

* an answer that says the node did its part (a prolog, a clientmount stop, an
  epilog with nothing busy) and that the ledger proves — the node task it ends
  was sent to that node's queue for that job — is counted with the others of
  its job and phase in one transaction that crosses their node tasks out of
  the ledger (``Tally.add_all``); the batch that completes the phase sends the
  locked decision (``job.answers_complete``, ``job.epilogs_complete``), and a
  batch that comes after a ``#DW`` job's mounts sends its nodes the
  clientmount stop, as each answer's task does (``pipeline.tasks.nodes``);
* any other answer — a failure, a late copy, busy services, one whose ledger
  entry is gone (a copy) or names another node — goes on as the task it names,
  sent by this worker, whose handler decides it one at a time as before;
* an entry that is not a node answer, or does not verify, is set aside as a dead
  letter with why, and nothing of it is counted.

The batch is acknowledged (and deleted) only after all of that. A worker
killed in between reads its own unacknowledged entries first when it starts
again under the same name; a worker that never comes back has its entries
claimed by another after :data:`RECLAIM_IDLE_S`. Counting an answer again
counts nothing new, and a completing batch read twice sends an idempotent
decision twice.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from celery import Celery
from celery.signals import worker_ready, worker_shutdown

from pipeline.errors import StoreUnavailable
from pipeline.platform import nodework
from pipeline.platform.answers import Answer, Reading, Unreadable, decode
from pipeline.platform.sending import dispatch, dispatch_nodes, settings_of, store_of
from pipeline.store import Store

log = logging.getLogger("coral2_pipeline.answers")

#: Answers read and counted at a time.
BATCH = 500
#: How long a read waits for an answer (ms): how soon the reader sees a stop.
BLOCK_MS = 1000
#: How long an entry taken by another reader waits before this one claims it (s).
RECLAIM_IDLE_S = 60.0
#: How long the reader waits after Redis failed it (s).
RETRY_S = 1.0

#: The answers a batch counts, and the phase each counts in.
PHASES = {
    "job.prolog_done": "prolog",
    "job.clientmount_done": "stopped",
    "job.epilog_done": "clean",
}


def _phase(answer: Answer) -> str | None:
    """The phase ``answer`` counts in when it says the node did its part, else None."""
    kwargs = answer.kwargs
    if kwargs.get("late") or kwargs.get("error") or kwargs.get("busy"):
        return None
    return PHASES.get(answer.name)


def count(app: Celery, store: Store, answers: list[Answer]) -> None:
    """Count ``answers`` (module docstring); those the batch does not count go on as the
    tasks they name."""
    prefix = settings_of(app).pipeline.queues.node_prefix
    entries = store.ledger.get_all([str(a.kwargs.get("task_id")) for a in answers])
    groups: dict[tuple[int, str], list[tuple[str, str]]] = {}
    rest: list[Answer] = []
    for answer, entry in zip(answers, entries, strict=True):
        node, jobid, phase = answer.kwargs.get("node"), answer.kwargs.get("jobid"), _phase(answer)
        if (
            phase is not None
            and entry is not None
            and isinstance(node, str)
            and isinstance(jobid, int)
            and entry.queue == prefix + node
            and entry.kwargs.get("jobid") == jobid
        ):
            groups.setdefault((jobid, phase), []).append((node, entry.task_id))
        else:
            rest.append(answer)
    for (jobid, phase), items in groups.items():
        nodes = [node for node, _ in items]
        counted = store.tally.add_all(jobid, phase, nodes, ends=[t for _, t in items])
        for node in nodes:
            last = counted.completes and node == nodes[-1]
            nodework.trace("counted", f"{phase} answer", jobid, node, "completes" if last else "")
        if phase == "prolog" and "mounted" in counted.flags:
            # the job's file systems were mounted before these nodes answered: stop at once
            stop = [
                (n, "node.clientmount", {"hostname": n, "jobid": jobid, "action": "stop"})
                for n in nodes
            ]
            dispatch_nodes(app, store, stop)
        if counted.completes:
            decision = "job.epilogs_complete" if phase == "clean" else "job.answers_complete"
            dispatch(app, store, decision, {"jobid": jobid})
    for answer in rest:
        dispatch(app, store, answer.name, answer.kwargs)


class AnswerReader:
    """Reads, verifies and counts the answers stream for one lifecycle worker."""

    def __init__(self, app: Celery, consumer: str) -> None:
        self.app, self.consumer = app, consumer
        self.store = store_of(app)
        self.reading = Reading.of(app)
        self._own = True  # first, what this consumer took before and did not finish
        self._reclaimed_at = -float("inf")

    def step(self, block_ms: int | None = BLOCK_MS) -> int:
        """Read one batch and handle it; return how many entries it held."""
        stream = self.store.answers
        entries: list[tuple[str, dict[bytes, bytes]]] = []
        if self._own:
            entries = stream.read(self.consumer, BATCH, None, own=True)
            self._own = bool(entries)
        now = time.monotonic()
        if not entries and now - self._reclaimed_at >= RECLAIM_IDLE_S / 4:
            entries = stream.reclaim(self.consumer, RECLAIM_IDLE_S, BATCH)
            if len(entries) < BATCH:
                self._reclaimed_at = now
        if not entries:
            entries = stream.read(self.consumer, BATCH, block_ms, own=False)
        if entries:
            self._handle(entries)
        return len(entries)

    def _handle(self, entries: list[tuple[str, dict[bytes, bytes]]]) -> None:
        answers: list[Answer] = []
        for entry_id, fields in entries:
            decoded = decode(self.app, entry_id, fields, self.reading)
            if isinstance(decoded, Unreadable):
                where = self.store.keys.answers
                self.store.dead_letters.add(where, decoded.raw, f"refused: {decoded.reason}")
                log.warning("answer %s refused: %s", entry_id, decoded.reason)
            else:
                answers.append(decoded)
        try:
            count(self.app, self.store, answers)
        except StoreUnavailable:
            raise
        except Exception:
            # not Redis: something in the batch this code cannot count. Each answer goes
            # on as its own task, whose handler sets aside what it cannot use
            log.exception("counting %d answers failed; each goes on as its task", len(answers))
            for answer in answers:
                dispatch(self.app, self.store, answer.name, answer.kwargs)
        self.store.answers.done([entry_id for entry_id, _ in entries])

    def run(self, stop: threading.Event) -> None:
        """Read until ``stop`` is set; Redis failures are waited out."""
        log.info("reading node answers from %s as %s", self.store.keys.answers, self.consumer)
        while not stop.is_set():
            try:
                self.step()
            except StoreUnavailable as exc:
                log.warning("reading node answers: %s; trying again", exc)
                self._own = True  # the batch in hand is still this consumer's
                stop.wait(RETRY_S)
            except Exception:
                log.exception("reading node answers failed; trying again")
                self._own = True
                stop.wait(RETRY_S)


_running: dict[int, tuple[threading.Thread, threading.Event]] = {}


def _serves_lifecycle(consumer: Any) -> bool:
    queues = consumer.app.amqp.queues.consume_from or consumer.app.amqp.queues
    return settings_of(consumer.app).pipeline.queues.lifecycle in set(queues)


@worker_ready.connect  # type: ignore[untyped-decorator]
def _start(sender: Any = None, **_: Any) -> None:
    """A lifecycle worker is ready: start its reader, named as the worker is."""
    app = getattr(sender, "app", None)
    if app is None or "coral2_settings" not in app.conf or not _serves_lifecycle(sender):
        return
    stop = threading.Event()
    reader = AnswerReader(app, str(sender.hostname))
    thread = threading.Thread(target=reader.run, args=(stop,), name="answers", daemon=True)
    _running[id(app)] = (thread, stop)
    thread.start()


@worker_shutdown.connect  # type: ignore[untyped-decorator]
def _stop(sender: Any = None, **_: Any) -> None:
    """The worker stops: so does its reader (after its batch in hand)."""
    for thread, stop in list(_running.values()):
        stop.set()
        thread.join(timeout=10)
    _running.clear()

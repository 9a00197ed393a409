"""Node answers read off each node's own stream in batches, checked, and counted.

Every lifecycle worker (a Celery worker consuming the lifecycle queue) runs one
:class:`AnswerReader` thread beside its consumer, started when the worker is ready and
stopped with it; one of them at a time holds the readers' lease and reads. It reads the
streams of the nodes answers are awaited from (``pipeline.store.answers``), up to
:data:`PER_NODE` entries of each at a time, and takes each entry through these gates, so
that what one node writes can hurt no other node's answers:

* a node's stream whose key is not a stream, or whose entries carry an ID past the end of
  time (which refuses that node's every later ``XADD``), is deleted, the node flagged;
* past ``pipeline.answers_per_minute`` entries of one node in a minute, the rest are
  deleted unread, and past ``pipeline.answer_max_bytes`` an entry is: each said once in
  a dead letter, the node flagged (``status`` names it);
* a node's own dead letter (``node.dead_letter``) joins the dead letters, named after the
  node;
* an entry that does not verify (``pipeline.platform.answers``), answers for another node
  than its stream's, or does not fit its answer's model (``pipeline.model.answers``:
  every argument named, typed, bounded) is set aside as a dead letter, nothing of it
  counted;
* an answer that says the node did its part and that the ledger proves — the node task it
  ends was sent to that node's queue for that job — is counted with the others of its job
  and phase in one transaction that crosses their node tasks out of the ledger
  (``Tally.add_all``); the batch that completes the phase sends the locked decision
  (``job.answers_complete``, ``job.epilogs_complete``), and a batch after a ``#DW`` job's
  mounts sends its nodes the clientmount stop;
* any other answer — a failure, a late copy, busy services, one whose ledger entry is
  gone (a copy) — goes on as the task it names, whose handler decides it one at a time;
  one that cannot be sent is set aside, and the others go on.

Every entry read is then deleted, whatever became of it: a bad entry never holds the good
ones. A reader killed before that reads them again (counting an answer twice counts it
once); a reader that stops renewing its lease is taken over by another.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from celery import Celery
from celery.signals import worker_ready, worker_shutdown

from pipeline.errors import StoreUnavailable
from pipeline.model.answers import Answer, AnswerError, Phase, answer_name, parse
from pipeline.model.node_messages import clientmount_stop
from pipeline.model.numbers import MAX_COUNT, natural_or_none
from pipeline.platform import nodework
from pipeline.platform.answers import Reading, Unreadable, decode
from pipeline.platform.deadletters import NODE_DEAD_LETTER
from pipeline.platform.nodework import expected_computes
from pipeline.platform.sending import dispatch, dispatch_nodes, settings_of, store_of
from pipeline.store import Store
from pipeline.store.connection import SOCKET_TIMEOUT_S
from pipeline.store.lease import Lease, identity

log = logging.getLogger("coral2_pipeline.answers")

#: Entries read from each node's stream at a time.
PER_NODE = 50
#: How long a read waits for an answer (ms): how soon the reader sees a stop. Well under
#: the store's socket timeout, which would otherwise end an idle read as a Redis failure.
BLOCK_MS = int(SOCKET_TIMEOUT_S * 1000 * 0.4)
#: How often the reader reads again which nodes it awaits, the bell unrung (s).
AWAITED_EVERY_S = 5.0
#: The readers' lease (s): a reader that stops renewing it is taken over after this.
LEASE_S = 10.0
#: How often at most the reader looks for answers of nodes it does not await while it has
#: none to read (s); while it reads answers: ``pipeline.answers_scan_every``.
SCAN_IDLE_S = 5.0
#: How long the reader waits after Redis failed it (s).
RETRY_S = 1.0
#: An entry ID whose time is this far past the reader's clock ends the node's stream (ms).
FUTURE_MS = 24 * 3600 * 1000
#: Dead letters one node's stream may cause in an hour (so that its garbage cannot push
#: every other dead letter out of the kept thousand); past them, it is flagged instead.
DEAD_LETTERS_PER_NODE = 50


@dataclass
class _Pass:
    """What one pass of the reader found, node by node."""

    now: float
    answers: list[Answer] = field(default_factory=list)
    handled: dict[str, list[str]] = field(default_factory=dict)
    letters: dict[str, int] = field(default_factory=dict)
    discard: set[str] = field(default_factory=set)


def settle(
    app: Celery, store: Store, jobid: int, phase: Phase, nodes: list[str], ends: list[str]
) -> None:
    """Count ``nodes``' answers to ``phase`` of ``jobid`` (``ends``: the node tasks they end,
    crossed out of the ledger in the same step) — the one place answers are counted, for
    the batches of the answers stream and for an answer that came as a task: a prolog
    answered after the job's file systems were mounted is told to stop the clientmount
    service at once, and the answer that completes the phase sends its locked decision."""
    counted = store.tally.add_all(jobid, phase, nodes, ends=ends)
    for node in nodes:
        last = counted.completes and node == nodes[-1]
        nodework.trace("counted", f"{phase} answer", jobid, node, "completes" if last else "")
    if phase == Phase.PROLOG and "mounted" in counted.flags:
        # a copy of an answer too: its first count may have died before sending the stop
        name, stop = clientmount_stop(jobid)
        dispatch_nodes(app, store, [(n, name, {"hostname": n, **stop}) for n in nodes])
    if counted.completes:
        decision = "job.epilogs_complete" if phase == Phase.CLEAN else "job.answers_complete"
        dispatch(app, store, decision, {"jobid": jobid})


def count(app: Celery, store: Store, answers: list[Answer]) -> list[tuple[Answer, str]]:
    """Count ``answers`` (module docstring); those the batch does not count go on as the
    tasks they name. Returns the answers that could not be sent on, and why."""
    prefix = settings_of(app).pipeline.queues.node_prefix
    entries = store.ledger.get_all([a.task_id for a in answers])
    groups: dict[tuple[int, Phase], list[tuple[str, str]]] = {}
    rest: list[Answer] = []
    for answer, entry in zip(answers, entries, strict=True):
        phase = answer.phase()
        if (
            phase is not None
            and entry is not None
            and entry.queue == prefix + answer.node
            and entry.kwargs.get("jobid") == answer.jobid
        ):
            groups.setdefault((answer.jobid, phase), []).append((answer.node, entry.task_id))
        else:
            rest.append(answer)
    for (jobid, phase), items in groups.items():
        settle(app, store, jobid, phase, [node for node, _ in items], [t for _, t in items])
    failed: list[tuple[Answer, str]] = []
    for answer in rest:
        try:
            dispatch(app, store, answer_name(answer), answer.model_dump(exclude_defaults=True))
        except StoreUnavailable:
            raise
        except Exception as exc:  # this answer alone: the rest of the batch goes on
            failed.append((answer, f"cannot send it on: {type(exc).__name__}: {exc}"))
    return failed


class AnswerReader:
    """Reads, checks and counts every node's answers for one lifecycle worker (one such
    reader at a time holds the lease)."""

    def __init__(self, app: Celery, consumer: str) -> None:
        self.app, self.consumer = app, consumer
        self.store = store_of(app)
        self.settings = settings_of(app).pipeline
        self.reading = Reading.of(app)
        self.holder = f"{consumer}:{identity()}"
        self.lease = Lease(self.store.client, self.store.keys.answers_reader)
        self._scanned_at = -float("inf")
        self._idle = True
        #: the nodes awaited and the bell's ring as of when they were read (a cache of
        #: Redis's, read again when the bell rings or every AWAITED_EVERY_S)
        self._awaited: tuple[float, list[str], str] | None = None

    def step(self, block_ms: int | None = BLOCK_MS) -> int:
        """Read one batch and handle it, if this reader holds the lease; return how many
        entries it held."""
        now = time.time()
        if not self.lease.hold(self.holder, LEASE_S):
            time.sleep((block_ms or 0) / 1000)  # a standby: the lease holder reads
            return 0
        answers = self.store.answers
        if self._awaited is None or now - self._awaited[0] >= AWAITED_EVERY_S:
            self._awaited = (now, *answers.awaited_since(now, prune=True))
        _, hosts, bell = self._awaited
        every = self.settings.answers_scan_every
        if now - self._scanned_at >= (min(SCAN_IDLE_S, every) if self._idle else every):
            hosts = sorted(set(hosts) | set(answers.holding()))
            self._scanned_at = now
        read, unreadable, rang = answers.read(hosts, PER_NODE, block_ms, bell)
        if rang:
            self._awaited = None  # new nodes are awaited: read which at the next pass
        answers.note_pass(self.holder, now)
        found = _Pass(time.time())
        for host in unreadable:
            self._refuse(found, host, f"{host}'s answers key is not a stream: it was deleted")
            found.discard.add(host)
        if read:
            self._handle(read, found)
        self._finish(found)
        taken = sum(len(entries) for entries in read.values())
        self._idle = taken == 0
        return taken

    def _handle(self, read: dict[str, list[tuple[str, dict[bytes, bytes]]]], found: _Pass) -> None:
        limit = self.settings.answers_per_minute
        full = self.store.answers.lengths(h for h, e in read.items() if len(e) >= PER_NODE)
        for host, length in full.items():  # more than a node answers in a minute, unread
            if length > limit:
                why = f"{host}'s answers stream held {length} entries, more than {limit}: deleted"
                self._refuse(found, host, why)
                found.discard.add(host)
                del read[host]
        totals = self.store.answers.rate({h: len(e) for h, e in read.items()}, found.now)
        for host, entries in read.items():
            found.handled[host] = [entry_id for entry_id, _ in entries]
            if totals[host] > limit:
                if totals[host] - len(entries) <= limit:  # the pass that crossed it says so
                    why = f"{host} wrote more than {limit} answers in a minute: the rest unread"
                    self._refuse(found, host, why)
                continue
            for entry_id, fields in entries:
                self._guarded(found, host, entry_id, fields)
        try:
            failed = count(self.app, self.store, found.answers)
        except StoreUnavailable:
            raise
        except Exception as exc:  # not Redis: set the batch's answers aside, never stall
            log.exception("counting %d answers failed", len(found.answers))
            failed = [(a, f"cannot count it: {type(exc).__name__}: {exc}") for a in found.answers]
        for answer, why in failed:
            self._letter(found, answer.node, answer_name(answer), repr(answer.model_dump()), why)

    def _guarded(self, found: _Pass, host: str, entry_id: str, fields: dict[bytes, bytes]) -> None:
        """:meth:`_entry`, whatever the entry holds: one that breaks a gate is set aside as a
        dead letter naming its node and entry, and the batch goes on (it is deleted with
        the rest). Only Redis failing stops the pass."""
        try:
            self._entry(found, host, entry_id, fields)
        except StoreUnavailable:
            raise
        except Exception as exc:  # what one node wrote: never the other nodes' answers
            why = f"entry {entry_id} of {host}'s stream cannot be read: {type(exc).__name__}: {exc}"
            self._letter(found, host, "answers", _shown(fields), why[:2000])

    def _entry(self, found: _Pass, host: str, entry_id: str, fields: dict[bytes, bytes]) -> None:
        """One entry of ``host``'s stream through the gates (module docstring)."""
        if _entry_ms(entry_id) > found.now * 1000 + FUTURE_MS:
            why = (
                f"{host}'s answers stream had an entry with ID {entry_id}, past which no "
                "answer can be added: the stream was deleted"
            )
            self._refuse(found, host, why)
            found.discard.add(host)
            return
        size = sum(len(k) + len(v) for k, v in fields.items())
        if size > self.settings.answer_max_bytes:
            why = f"an entry of {size} bytes, over answer_max_bytes: set aside unread"
            # set aside first, then flagged: the flag says it was set aside
            self._letter(found, host, "answers", f"{size} bytes, unread", why)
            self._refuse(found, host, why, dead_letter=False)
            return
        if fields.get(b"task") == NODE_DEAD_LETTER.encode():
            where = _text(fields.get(b"where", b""))
            whole = _text(fields.get(b"size", b""))
            raw, why = fields.get(b"raw", b""), _text(fields.get(b"reason", b""))
            self._letter(found, host, where, raw, why, natural_or_none(whole, most=MAX_COUNT))
            return
        decoded = decode(self.app, entry_id, fields, self.reading)
        if isinstance(decoded, Unreadable):
            self._letter(found, host, "answers", decoded.raw, f"refused: {decoded.reason}")
            return
        if decoded.kwargs.get("node") != host:
            why = f"refused: an answer for {decoded.kwargs.get('node')!r} on {host}'s stream"
            self._letter(found, host, "answers", repr(decoded.kwargs)[:2000], why)
            return
        try:
            found.answers.append(parse(decoded.name, decoded.kwargs))
        except AnswerError as exc:
            self._letter(found, host, "answers", repr(decoded.kwargs)[:2000], f"refused: {exc}")

    def _letter(
        self,
        found: _Pass,
        host: str,
        where: str,
        raw: bytes | str,
        why: str,
        size: int | None = None,
    ) -> None:
        """Set aside what ``host`` wrote, at most :data:`DEAD_LETTERS_PER_NODE` an hour."""
        found.letters[host] = found.letters.get(host, 0) + 1
        log.warning("an answer of %s set aside: %s", host, why)
        taken = self.store.answers.rate({host: 1}, found.now, 3600)[host]
        if taken <= DEAD_LETTERS_PER_NODE:
            self.store.dead_letters.add(f"{host}:{where}", raw, why, size)
        if taken == DEAD_LETTERS_PER_NODE:
            self._refuse(
                found, host, f"{host} wrote {taken} bad entries in an hour", dead_letter=False
            )

    def _refuse(self, found: _Pass, host: str, why: str, *, dead_letter: bool = True) -> None:
        """``host``'s answers were refused wholesale: flag the node (``status``)."""
        log.warning("answers of %s: %s", host, why)
        self.store.answers.flag(host, why, found.now)
        if dead_letter:
            self.store.dead_letters.add(f"{host}:answers", "", why)

    def _finish(self, found: _Pass) -> None:
        """Delete what was read, and the streams that cannot take answers."""
        for host in self.store.answers.done(found.handled):
            why = f"{host}'s answers key stopped being a stream while it was read: deleted"
            self._refuse(found, host, why)
            found.discard.add(host)
        for host in found.discard:
            self.store.answers.discard(host)

    def run(self, stop: threading.Event) -> None:
        """Read until ``stop`` is set; failures are logged and waited out."""
        log.info(
            "reading node answers from %s as %s", self.store.keys.node_answers_pattern, self.holder
        )
        while not stop.is_set():
            try:
                self.step()
            except StoreUnavailable as exc:
                log.warning("reading node answers: %s; trying again", exc)
                stop.wait(RETRY_S)
            except Exception:
                log.exception("reading node answers failed; trying again")
                stop.wait(RETRY_S)
        with contextlib.suppress(StoreUnavailable):  # else it expires
            self.lease.resign(self.holder)


def _entry_ms(entry_id: str) -> int:
    ms, _, _ = entry_id.partition("-")
    return natural_or_none(ms) or 0


def _shown(fields: dict[bytes, bytes]) -> str:
    """An entry's fields as a dead letter keeps them: at most 2,000 characters."""
    text = repr({_text(k)[:100]: _text(v)[:500] for k, v in list(fields.items())[:20]})
    return text[:2000]


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


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
    # the node workers status must find connected, as this worker's settings say
    computes, _problem = expected_computes(settings_of(app))
    with contextlib.suppress(StoreUnavailable):  # noted again at the next start
        store_of(app).expected_node_workers.publish(computes)
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

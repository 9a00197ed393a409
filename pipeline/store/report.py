"""Read-only reports of what the store holds: the whole pipeline, or one job.

``coral2-pipeline status`` prints them (``pipeline/cli/status_cmd.py``). Nothing
here writes, and every read is bounded: a report costs a few round trips and
reads at most ``scan_limit`` entries of each hash or stream it searches, so an
admin may run it in a loop against production Redis.

The fields are what the keys hold (docs/platform.md, "Redis keys"); judging
them — how old is too old — is the caller's.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
import pydantic
import redis

from pipeline.model.answers import Phase
from pipeline.model.deadletter import DeadLetter
from pipeline.model.job import JobRecord
from pipeline.store.census import Census, NodeCensus
from pipeline.store.connection import refused_keys, store_errors
from pipeline.store.deadlines import Deadline
from pipeline.store.jobs import parse_notes
from pipeline.store.keys import Keys
from pipeline.store.ledger import Entry

if TYPE_CHECKING:
    from pipeline.store import Store
    from pipeline.store.outbox import Delivery

#: How many entries of a hash or stream a report reads at most when it searches one.
SCAN_LIMIT = 10_000

#: Records read per round trip when a report counts states.
_BATCH = 500

#: What the watcher watches (each resumes from its own resourceVersion).
_WATCHED = ("workflows", "storages")

#: The state shown for a record that cannot be read (see the job's own report).
UNREADABLE = "(unreadable record)"

#: The state shown for a tracked job whose record is gone (a lost create, or an admin's DEL).
NO_RECORD = "(no record)"


@dataclass(frozen=True)
class JobView:
    """Everything the store holds about one job."""

    jobid: int
    record: JobRecord | None
    record_error: str | None  # why the stored record could not be read (None: it could)
    tracked: bool  # in the index: its Workflow has not been seen gone
    marks: list[str]  # one-shot marks set: messages sent to Flux, actions taken once
    lock_ttl_ms: int | None  # the job's lock expires in this long; None when free
    observe_pending: bool  # an observe of it is queued
    seen: tuple[str, float] | None  # the watcher's latest event: (resourceVersion, epoch s)
    deadlines: list[Deadline]
    outbox: list[Delivery]  # its messages Flux has not acknowledged
    ledger: list[Entry]  # its sent tasks without an outcome
    failures: list[dict[str, Any]]  # its tasks that failed for good
    answered: dict[str, list[str]] = field(default_factory=dict)  # node-work phase → nodes
    searched_all: bool = True  # False: a searched hash or stream was longer than the limit

    @property
    def known(self) -> bool:
        """Whether the store holds anything at all about the job."""
        return bool(
            self.record is not None
            or self.record_error
            or self.tracked
            or self.marks
            or self.seen
            or self.deadlines
            or self.outbox
            or self.ledger
            or self.failures
        )


@dataclass(frozen=True)
class PipelineView:
    """The state of the whole pipeline, as the store shows it."""

    at: float  # when it was read (epoch s)
    tracked: int
    states: dict[str, int]  # the tracked records' last observed state → how many
    stalest: list[tuple[int, str | None, float | None]]  # (jobid, state, observed at)
    unobserved: list[tuple[int, str, float]]  # events no observe read: (jobid, rv, seen at)
    outbox_backlog: int
    outbox_unacked: int  # taken by a reader, not yet acknowledged
    outbox_oldest_at: float | None  # when the oldest entry was appended (epoch s)
    answers_waiting: int  # answers on the streams of the nodes awaited, not yet counted
    answers_oldest_at: float | None  # when the oldest was appended (epoch s)
    answers_read: tuple[float, str] | None  # (when, by whom) the answers were last read
    answers_flagged: dict[str, tuple[float, str]]  # host → (when, why) refused wholesale
    ledger_pending: int
    ledger_oldest: list[Entry]
    hwcoll_held: int  # jobs holding a multicast reservation not yet released
    failures: int
    recent_failures: list[dict[str, Any]]  # newest first
    deadlines: int
    next_deadline: Deadline | None
    locks_held: int
    watcher_leader: str | None
    watch_resume: dict[str, str] = field(default_factory=dict)  # plural → resourceVersion
    rabbits: dict[str, dict[str, Any]] = field(default_factory=dict)  # name → health
    beat_tick: tuple[float, str] | None = None  # the leading beat's latest tick: (at, holder)
    alive: dict[str, float] = field(default_factory=dict)  # queue → latest heartbeat taken
    dead_letters: int = 0  # kept in the dead-letter list
    dead_letters_total: int = 0  # ever set aside
    latest_dead_letters: list[DeadLetter] = field(default_factory=list)  # newest first
    memory: tuple[int, int] | None = None  # Redis's (used_memory, maxmemory) in bytes
    clients: tuple[int, int] | None = None  # Redis's (connected_clients, maxclients)
    #: the computes expected to run a node worker, those with no heartbeat, and the
    #: messages on their queues (None: no computes asked of, or the census refused)
    node_workers: NodeCensus | None = None
    #: state → when the job in it the longest was last seen changing (epoch s)
    oldest_by_state: dict[str, float] = field(default_factory=dict)
    #: task name → how many of its runs failed for good (the failures kept)
    failures_by_task: dict[str, int] = field(default_factory=dict)


def job_view(store: Store, jobid: int, *, scan_limit: int = SCAN_LIMIT) -> JobView:
    """Read what ``store`` holds about ``jobid``."""
    keys, client = store.keys, store.client
    try:
        pipe = client.pipeline(transaction=False)
        pipe.get(keys.job(jobid))
        pipe.sismember(keys.jobs_index, str(jobid))
        pipe.hkeys(keys.marks(jobid))
        pipe.pttl(keys.lock(jobid))
        pipe.exists(keys.observe_pending(jobid))
        pipe.hget(keys.workflow_seen, str(jobid))
        pipe.zrange(keys.deadlines, 0, -1, withscores=True)
        raw, tracked, marks, ttl, pending, seen, deadlines = pipe.execute()
        failures, failures_all = _scan(client, keys.failures, scan_limit)
    except redis.RedisError as exc:
        raise store_errors(exc) from exc
    outbox, outbox_all = store.outbox.peek(scan_limit)
    ledger, ledger_all = store.ledger.scan(scan_limit)
    record, error = _record(raw)
    prefix = f"{jobid}:"
    return JobView(
        jobid=jobid,
        record=record,
        record_error=error,
        tracked=bool(tracked),
        marks=sorted(_text(m) for m in marks),
        lock_ttl_ms=int(ttl) if int(ttl) >= 0 else None,
        observe_pending=bool(pending),
        seen=parse_notes({jobid: seen}).get(jobid) if seen is not None else None,
        deadlines=[
            Deadline.parse(_text(m), float(s)) for m, s in deadlines if _text(m).startswith(prefix)
        ],
        outbox=[d for d in outbox if d.message is not None and d.message.jobid == jobid],
        ledger=[e for e in ledger if _jobid_of(e.kwargs) == jobid],
        failures=[f for f in map(_json, (v for _, v in failures)) if _jobid_of(f) == jobid],
        answered={phase: sorted(store.tally.nodes(jobid, phase)) for phase in Phase},
        searched_all=outbox_all and ledger_all and failures_all,
    )


def _appended_at(first: Any) -> float | None:
    """When the first entry of an ``XRANGE … COUNT 1`` was appended (its id's time)."""
    return int(_text(first[0][0]).split("-")[0]) / 1000 if first else None


def pipeline_view(
    store: Store,
    *,
    limit: int = 10,
    scan_limit: int = SCAN_LIMIT,
    nodes: list[str] | None = None,
    node_queue_prefix: str = "node.",
) -> PipelineView:
    """Read the state of the whole pipeline from ``store``; each list holds at most
    ``limit``; with ``nodes``, their node workers' census (queues ``node_queue_prefix``
    and the host)."""
    keys, client = store.keys, store.client
    try:
        pipe = client.pipeline(transaction=False)
        pipe.hgetall(keys.workflow_seen)
        pipe.xlen(keys.outbox)
        pipe.xrange(keys.outbox, count=1)
        pipe.zcard(keys.deadlines)
        pipe.zrange(keys.deadlines, 0, 0, withscores=True)
        pipe.hlen(keys.failures)
        pipe.get(keys.watcher_leader)
        pipe.mget([keys.watch_rv(plural) for plural in _WATCHED])
        pipe.hgetall(keys.rabbits)
        pipe.get(keys.beat_tick)
        pipe.hgetall(keys.alive)
        (seen, backlog, first, deadlines, due, failed, leader, rvs, rabbits, tick, alive) = (
            pipe.execute()
        )
        answers, answers_oldest = store.answers.backlog(store.answers.awaited(time.time()))
        locks = sum(1 for _ in client.scan_iter(f"{keys.prefix}:lock:*", count=1000))
        last = store.jobs.observed()  # every tracked job: ("", 0.0) when never observed
        jobids = sorted(last)
        states, hwcoll_held = _states(client, keys, jobids)
        failures, _ = _scan(client, keys.failures, scan_limit)
        census = Census(client, keys, node_queue_prefix).take(nodes) if nodes else None
    except redis.RedisError as exc:
        raise store_errors(exc) from exc
    kept, total = store.dead_letters.counts()
    memory = _memory(client)
    clients = _clients(client)
    stalest = sorted(
        ((j, states.get(j), last[j][1] or None) for j in jobids),
        key=lambda row: row[2] or 0.0,  # never observed: first
    )
    unobserved = [
        (j, rv, at) for j, (rv, at) in parse_notes(seen).items() if rv != last.get(j, ("", 0))[0]
    ]
    recent = sorted(map(_json, (v for _, v in failures)), key=_failed_at, reverse=True)
    oldest: dict[str, float] = {}
    for jobid in jobids:
        state, at = states.get(jobid) or "(not observed yet)", last[jobid][1]
        if at and (state not in oldest or at < oldest[state]):
            oldest[state] = at
    by_task = Counter(str(f.get("task")) for f in recent)
    return PipelineView(
        at=time.time(),
        tracked=len(jobids),
        hwcoll_held=hwcoll_held,
        states=dict(Counter(s or "(not observed yet)" for s in states.values())),
        stalest=stalest[:limit],
        unobserved=sorted(unobserved, key=lambda row: row[2])[:limit],
        outbox_backlog=int(backlog),
        outbox_unacked=store.outbox.unacked(),
        outbox_oldest_at=_appended_at(first),
        answers_waiting=answers,
        answers_oldest_at=answers_oldest,
        answers_read=store.answers.last_pass(),
        answers_flagged=store.answers.flagged(),
        ledger_pending=store.ledger.pending(),
        ledger_oldest=store.ledger.unsettled(limit),
        failures=int(failed),
        recent_failures=recent[:limit],
        deadlines=int(deadlines),
        next_deadline=Deadline.parse(_text(due[0][0]), float(due[0][1])) if due else None,
        locks_held=locks,
        watcher_leader=None if leader is None else _text(leader),
        watch_resume={p: _text(rv) for p, rv in zip(_WATCHED, rvs, strict=True) if rv},
        rabbits={_text(name): _json(health) for name, health in rabbits.items()},
        beat_tick=_tick(tick),
        alive={_text(q): float(at) for q, at in alive.items()},
        dead_letters=kept,
        dead_letters_total=total,
        latest_dead_letters=store.dead_letters.latest(min(limit, 3)) if kept else [],
        memory=memory,
        clients=clients,
        node_workers=census,
        oldest_by_state=oldest,
        failures_by_task=dict(by_task),
    )


def _memory(client: redis.Redis) -> tuple[int, int] | None:
    """Redis's (used_memory, maxmemory); None when this user may not read ``INFO``."""
    try:
        info: Any = client.info("memory")
    except redis.RedisError:
        return None
    return int(info.get("used_memory", 0)), int(info.get("maxmemory", 0))


def _clients(client: redis.Redis) -> tuple[int, int] | None:
    """Redis's (connected_clients, maxclients); None when this user may not read ``INFO``."""
    try:
        info: Any = client.info("clients")
    except redis.RedisError:
        return None
    if "maxclients" not in info:  # Redis before 7.0 does not say
        return None
    return int(info.get("connected_clients", 0)), int(info["maxclients"])


def _tick(raw: Any) -> tuple[float, str] | None:
    """``"<epoch s> <holder>"`` → (epoch s, holder); None when absent or unreadable."""
    if raw is None:
        return None
    at, _, holder = _text(raw).partition(" ")
    try:
        return float(at), holder
    except ValueError:
        return None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _record(raw: Any) -> tuple[JobRecord | None, str | None]:
    if raw is None:
        return None, None
    try:
        return JobRecord.model_validate_json(raw), None
    except pydantic.ValidationError as exc:
        return None, f"{exc.error_count()} problem(s), first: {exc.errors()[0]['msg']}"


def _json(value: Any) -> dict[str, Any]:
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"unreadable": _text(value)}


def _jobid_of(values: dict[str, Any]) -> int | None:
    try:
        return int(values["jobid"])
    except (KeyError, TypeError, ValueError):
        return None


def _failed_at(failure: dict[str, Any]) -> float:
    try:
        return float(failure.get("time") or 0.0)
    except (TypeError, ValueError):
        return 0.0


def _scan(client: redis.Redis, key: str, limit: int) -> tuple[list[tuple[Any, Any]], bool]:
    """Up to ``limit`` fields of hash ``key``; and whether that was all of them."""
    out: list[tuple[Any, Any]] = []
    for item in client.hscan_iter(key, count=500):
        if len(out) == limit:
            return out, False
        out.append(item)
    return out, True


def _states(
    client: redis.Redis, keys: Keys, jobids: list[int]
) -> tuple[dict[int, str | None], int]:
    """Jobid → the state its record's last observe saw, None if none has yet; and how
    many hold a multicast reservation not released (records read in batches; each parsed
    for these alone, and validated whole only when that fails, for the problem's words)."""
    out: dict[int, str | None] = {}
    held = 0
    for start in range(0, len(jobids), _BATCH):
        batch = jobids[start : start + _BATCH]
        raws: Any = client.mget([keys.job(j) for j in batch])
        for jobid, raw in zip(batch, raws, strict=True):
            state, holds = _state_of(raw)
            held += holds
            if state is _UNPARSED:
                record, error = _record(raw)
                state = UNREADABLE if error else record.state if record else NO_RECORD
            out[jobid] = state  # type: ignore[assignment]
    return out, held


#: :func:`_state_of`'s answer for a record it cannot read the state of on its own.
_UNPARSED = object()


def _state_of(raw: Any) -> tuple[object, bool]:
    """The state a record holds (:data:`NO_RECORD` for none), or :data:`_UNPARSED`; and
    whether it holds a multicast reservation not released."""
    if raw is None:
        return NO_RECORD, False
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _UNPARSED, False
    if not isinstance(data, dict) or not isinstance(data.get("jobid"), int):
        return _UNPARSED, False
    state, hwcoll = data.get("state"), data.get("hwcoll")
    holds = isinstance(hwcoll, dict) and not hwcoll.get("released")
    return (state if state is None or isinstance(state, str) else _UNPARSED), holds


def queue_lengths(store: Store, names: list[str]) -> dict[str, int]:
    """Queue name → messages waiting in it (LLEN, pipelined in batches)."""
    out: dict[str, int] = {}
    try:
        for start in range(0, len(names), _BATCH):
            batch = names[start : start + _BATCH]
            pipe = store.client.pipeline(transaction=False)
            for name in batch:
                pipe.llen(name)
            found = pipe.execute(raise_on_error=False)
            refused_keys(batch, found)  # a connection error is the store's
            # a key that is not a list (a node's own queue it made something else) holds
            # no message: 0, and the other queues are counted
            out.update(
                (n, v if isinstance(v, int) else 0) for n, v in zip(batch, found, strict=True)
            )
    except redis.RedisError as exc:
        raise store_errors(exc) from exc
    return out

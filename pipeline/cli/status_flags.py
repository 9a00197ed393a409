"""What ``coral2-pipeline status`` flags, and how bad each is, as a monitoring check reads
it: each flag is a WARNING (look at it soon) or CRITICAL (jobs are not moving), and the
exit status is the worst of them, with Nagios's meaning (0 OK, 1 WARNING, 2 CRITICAL,
3 UNKNOWN). A flag reads the state as it is now, so it clears once its cause is gone."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.model.hostlist import encode_hostlist
from pipeline.store.report import JobView, PipelineView
from pipeline.store.resync import LOST_AFTER_S

OK, WARNING, CRITICAL, UNKNOWN = 0, 1, 2, 3
NAMES = {OK: "OK", WARNING: "WARNING", CRITICAL: "CRITICAL", UNKNOWN: "UNKNOWN"}


@dataclass(frozen=True)
class Flag:
    """One thing to look at."""

    severity: int
    text: str


def verdict(flags: list[Flag]) -> int:
    """The exit status: the worst flag's severity (OK without one)."""
    return max((f.severity for f in flags), default=OK)


def headline(flags: list[Flag]) -> str:
    """The check's first line, as Nagios shows it: the verdict and the worst flag."""
    status = verdict(flags)
    if status == OK:
        return "OK: nothing to look at"
    worst = [f for f in flags if f.severity == status]
    more = f" (+{len(flags) - 1} more)" if len(flags) > 1 else ""
    return f"{NAMES[status]}: {worst[0].text}{more}"


def perfdata(view: PipelineView, nodes: list[str] | None) -> str:
    """The figures after ``|`` on the check's first line, as Nagios plugins give them
    (``'label'=value[unit];warn;crit;min;max``): what the report counts, for graphs."""
    figures = [
        f"tracked_jobs={view.tracked};;;0",
        f"outbox={view.outbox_backlog};;;0",
        f"outbox_unacked={view.outbox_unacked};;;0",
        f"answers_waiting={view.answers_waiting};;;0",
        f"sent_tasks={view.ledger_pending};;;0",
        f"deadlines={view.deadlines};;;0",
        f"failures={view.failures};;;0",
        f"dead_letters={view.dead_letters};;;0",
        f"locks_held={view.locks_held};;;0",
    ]
    if view.outbox_oldest_at is not None:
        figures.append(f"outbox_oldest={max(view.at - view.outbox_oldest_at, 0):.1f}s;;;0")
    if nodes and view.node_workers is not None:
        census = view.node_workers
        figures.append(f"node_workers={census.alive};;;0;{census.expected}")
    return " ".join(figures)


def job_flags(view: JobView, now: float, resend_after_s: float) -> list[Flag]:
    """The flags of one job."""
    flags: list[Flag] = []
    if view.record_error:
        why = f"its record cannot be read ({view.record_error}): a task of it will fail"
        flags.append(Flag(CRITICAL, why))
    record = view.record
    read_rv = record.observed_rv if record else ""
    if view.seen and view.seen[0] != read_rv and now - view.seen[1] > LOST_AFTER_S:
        why = (
            f"its latest Workflow event (rv {view.seen[0]}) went unobserved for "
            f"{now - view.seen[1]:.0f} s: are a worker and beat (dws.resync) running?"
        )
        flags.append(Flag(WARNING, why))
    if view.failures:
        why = f"{len(view.failures)} of its tasks failed for good (see failures)"
        flags.append(Flag(WARNING, why))
    overdue = [e.name for e in view.ledger if now - e.first_sent > resend_after_s]
    if overdue:
        flags.append(Flag(WARNING, _overdue(overdue, resend_after_s)))
    if not view.searched_all:
        why = "the outbox, ledger or failures list is longer than the search limit"
        flags.append(Flag(WARNING, why))
    return flags


#: A beat tick older than this is flagged (the leader ticks at least every lease/3).
BEAT_LATE_S = 30.0
#: A queue whose latest heartbeat (sent every 10 s) is older than this is flagged.
QUEUE_LATE_S = 60.0
#: An outbox entry Flux has not taken for this long is flagged: the bridge is not delivering.
OUTBOX_LATE_S = 60.0


#: The share of Redis's maxmemory past which ``status`` flags it.
MEMORY_HIGH = 0.8


def _memory_flags(memory: tuple[int, int] | None) -> list[Flag]:
    if memory is None:
        return []
    used, limit = memory
    if limit == 0:
        why = (
            "Redis has no maxmemory: a flood can exhaust its host; set maxmemory and "
            "maxmemory-policy noeviction (deploy/redis/coral2-pipeline.conf)"
        )
        return [Flag(WARNING, why)]
    if used > MEMORY_HIGH * limit:
        why = (
            f"Redis uses {used / 2**20:.0f} MiB of its {limit / 2**20:.0f} MiB maxmemory: "
            "past it every write is refused; see docs/operations.md (Redis memory) for the "
            "biggest keys and how to shut out a flooding node's user"
        )
        return [Flag(WARNING, why)]
    return []


#: Connections to Redis a node may hold: the Redis hosts' firewall cap
#: (deploy/nftables/coral2-pipeline-redis.nft: a node worker's two, a waiting per-rank
#: prolog's one, one for a reconnect); and what the management side holds at most, with
#: headroom.
CONNECTIONS_PER_NODE = 4
MANAGEMENT_CONNECTIONS = 500


def _client_flags(clients: tuple[int, int] | None, nodes: list[str] | None) -> list[Flag]:
    if clients is None:
        return []
    connected, limit = clients
    need = CONNECTIONS_PER_NODE * len(nodes or ()) + MANAGEMENT_CONNECTIONS
    if nodes and limit < need:
        why = (
            f"Redis accepts at most {limit} clients, and the node workers of {len(nodes)} "
            f"computes and the management side need {need}: set maxclients {need} or more "
            f"and redis-server's LimitNOFILE= at least 32 above it (Redis lowers maxclients "
            "to the file-descriptor limit less 32, saying so only in its log; "
            "deploy/redis/)"
        )
        return [Flag(WARNING, why)]
    if connected > MEMORY_HIGH * limit:
        why = (
            f"Redis has {connected} of its {limit} clients connected: past it every new "
            "connection is refused (a node worker that reconnects cannot); raise maxclients "
            "and redis-server's LimitNOFILE="
        )
        return [Flag(WARNING, why)]
    return []


#: How long a Workflow may wait on DWS in one state, without a change, before status
#: flags it (s), for the states whose own timeout (``rabbit.<state>_timeout``) is off.
STATE_LATE_S = 600.0


def stuck(
    view: PipelineView, timeouts: dict[str, float] | None = None
) -> list[tuple[int, str, float]]:
    """The jobs whose Workflow waits on DWS (not ready) in one state, with no change seen,
    for longer than that state's timeout (``timeouts``: state → s; else
    :data:`STATE_LATE_S`): (jobid, state, for how long)."""
    out = []
    for jobid, state, at in view.stalest:
        if not state or at is None:
            continue
        name, _, progress = state.partition(":")
        if progress == "ready" or name in ("", "new"):
            continue
        limit = (timeouts or {}).get(name) or STATE_LATE_S
        if view.at - at > limit:
            out.append((jobid, state, view.at - at))
    return out


def _answer_flags(view: PipelineView, now: float) -> list[Flag]:
    """The node answers: waiting uncounted, the reader that stopped or fails, the nodes
    whose answers were refused wholesale."""
    flags: list[Flag] = []
    read = view.answers_read
    if view.answers_oldest_at and now - view.answers_oldest_at > OUTBOX_LATE_S:
        age = f"the oldest node answer is {now - view.answers_oldest_at:.0f} s old, not counted"
        if read is None or now - read[0] > OUTBOX_LATE_S:
            since = f"for {now - read[0]:.0f} s (last: {read[1]})" if read else "ever"
            why = (
                f"{age}, and no lifecycle worker has read the answers {since}: is a lifecycle "
                "worker (`coral2-pipeline worker`) running? Its jobs wait at RUN"
            )
        else:
            why = (
                f"{age}, though the reader {read[1]} read {now - read[0]:.0f} s ago: it fails "
                "to count them (its log says why); its jobs wait at RUN"
            )
        flags.append(Flag(CRITICAL, why))
    for host, (when, reason) in sorted(view.answers_flagged.items())[:10]:
        why = (
            f"node {host} wrote what the pipeline set aside, {now - when:.0f} s ago: {reason} "
            "(docs/runbook.md: a node that misbehaves; `coral2-pipeline deadletters "
            f"--clear-node {host}` once dealt with)"
        )
        flags.append(Flag(WARNING, why))
    if len(view.answers_flagged) > 10:
        flags.append(Flag(WARNING, f"and {len(view.answers_flagged) - 10} more nodes flagged"))
    return flags


#: The share of node workers silent past which jobs are not moving (CRITICAL); fewer is a
#: WARNING: the jobs on those nodes wait, the machine runs.
SILENT_CRITICAL_SHARE = 0.10


def silent_severity(silent: int, expected: int) -> int:
    """How bad ``silent`` node workers of ``expected`` are: CRITICAL from a tenth of them
    (every one, on a small system), else WARNING."""
    return CRITICAL if silent >= max(1.0, SILENT_CRITICAL_SHARE * expected) else WARNING


#: A tracked job's state when DWS refused its Teardown (``dws.observe``'s summary).
TEARDOWN_REFUSED = "Teardown:Error"


def pipeline_flags(
    view: PipelineView,
    resend_after_s: float,
    nodes: list[str] | None = None,
    timeouts: dict[str, float] | None = None,
) -> list[Flag]:
    """The flags of the whole pipeline; ``nodes``: the computes that must run a node
    worker (None: none must); ``timeouts``: each state's timeout (:func:`stuck`)."""
    now = view.at
    flags: list[Flag] = []
    late = stuck(view, timeouts)
    if late:
        jobid, state, for_s = late[0]
        why = (
            f"{len(late)} job(s) wait on DWS in one state past its timeout, e.g. job {jobid} "
            f"in {state} for {for_s / 60:.0f} min with no change: `coral2-pipeline status -j "
            f"{jobid}`, `kubectl get workflow fluxjob-{jobid} -o yaml`"
        )
        flags.append(Flag(WARNING, why))
    if refused := view.states.get(TEARDOWN_REFUSED):
        example = next((j for j, state, _ in view.stalest if state == TEARDOWN_REFUSED), None)
        which = f" (e.g. fluxjob-{example})" if example is not None else ""
        why = (
            f"{refused} Workflow(s) in Teardown with an Error DWS will not clear{which}: "
            "their jobs' epilogs were released, the Workflows (and maybe their storage) are "
            "left for you: `kubectl get workflows | grep Teardown`, then the runbook's "
            "'A Teardown DWS refuses'"
        )
        flags.append(Flag(WARNING, why))
    flags += _drift_flags(view)
    flags += disabled_rabbits(view)
    if nodes and view.node_workers is None:  # a check that cannot run says so
        why = (
            "cannot check the node workers: Redis refused this user the census script "
            "(grant +evalsha_ro +eval_ro: coral2-pipeline redis-acl)"
        )
        flags.append(Flag(UNKNOWN, why))
    elif nodes and view.node_workers is not None:
        silent = view.node_workers.silent
        if silent:
            why = (
                f"{len(silent)} of {len(nodes)} node workers are not running (no "
                f"heartbeat from {encode_hostlist(silent)}): jobs on those nodes wait for "
                "their prologs; is coral2-pipeline-node-worker running there?"
            )
            flags.append(Flag(silent_severity(len(silent), len(nodes)), why))
    if view.watcher_leader is None:
        why = "no watcher leads: start `coral2-pipeline watch` (no event reaches a task)"
        flags.append(Flag(CRITICAL, why))
    lost = [j for j, _, at in view.unobserved if now - at > LOST_AFTER_S]
    if lost:
        why = (
            f"{len(lost)} job(s) have a Workflow event unobserved for over "
            f"{LOST_AFTER_S:.0f} s (e.g. {lost[0]}): are a worker and beat (dws.resync) "
            "running?"
        )
        flags.append(Flag(WARNING, why))
    if view.outbox_oldest_at and now - view.outbox_oldest_at > OUTBOX_LATE_S:
        why = (
            f"the outbox's oldest entry is {now - view.outbox_oldest_at:.0f} s old: "
            "is `coral2-pipeline flux-bridge` running and Flux answering?"
        )
        flags.append(Flag(CRITICAL, why))
    flags += _answer_flags(view, now)
    overdue = [e.name for e in view.ledger_oldest if now - e.first_sent > resend_after_s]
    if overdue:
        flags.append(Flag(WARNING, _overdue(overdue, resend_after_s)))
    if view.failures:
        why = f"{view.failures} task(s) failed for good: `coral2-pipeline status -j JOBID` for one"
        flags.append(Flag(WARNING, why))
    tick = view.beat_tick
    if tick is None or now - tick[0] > BEAT_LATE_S:
        since = f"for {now - tick[0]:.0f} s (last: {tick[1]})" if tick else "ever"
        why = (
            f"beat has not ticked {since}: is `coral2-pipeline beat` running, and not "
            "stopped? Deadlines, resync, redelivery and these checks wait for it"
        )
        flags.append(Flag(CRITICAL, why))
    else:
        for queue, at in sorted(view.alive.items()):
            if now - at > QUEUE_LATE_S:
                why = (
                    f"no worker has taken work from queue {queue} for {now - at:.0f} s: "
                    "start one (`coral2-pipeline worker`) or see why every worker is stuck"
                )
                flags.append(Flag(CRITICAL, why))
    flags += _memory_flags(view.memory)
    flags += _client_flags(view.clients, nodes)
    if view.latest_dead_letters:
        latest = view.latest_dead_letters[0]
        why = (
            f"{view.dead_letters} message(s) set aside as dead letters (latest from "
            f"{latest.where} {_ago(now, latest.at)}: {latest.reason}): read them with "
            "`coral2-pipeline deadletters`, then `coral2-pipeline deadletters --clear`"
        )
        flags.append(Flag(WARNING, why))
    return flags


def disabled_rabbits(view: PipelineView) -> list[Flag]:
    """Every rabbit whose Storage is Disabled (its ``spec.state``, or nnf's status), and
    why: the pipeline disables one whose Workflow would not tear down (``dws.abort``), an
    admin may too. Its ssds are down in Flux and no new job gets its storage until it is
    enabled again."""
    flags = []
    for name, health in sorted(view.rabbits.items()):
        if health.get("state") != "Disabled" and health.get("status") != "Disabled":
            continue
        reason = health.get("disable_reason") or health.get("message") or "no reason given"
        since = f" since {health['disable_date']}" if health.get("disable_date") else ""
        why = (
            f"rabbit {name} is Disabled{since}: {reason}; jobs that need its storage wait "
            f"until it is enabled again (docs/runbook.md, 'A rabbit Disabled': `kubectl "
            f'patch storage {name} --type merge -p \'{{"spec":{{"state":"Enabled"}}}}\'`)'
        )
        flags.append(Flag(WARNING, why))
    return flags


def _drift_flags(view: PipelineView) -> list[Flag]:
    """The computes the rabbitmapping puts behind another rabbit than its Storage does
    (storage.observe notes them): their jobs are refused in Setup until it is rebuilt."""
    moved = {
        compute: (rabbit, mapped)
        for rabbit, health in sorted(view.rabbits.items())
        for compute, mapped in sorted((health.get("drift") or {}).items())
    }
    if not moved:
        return []
    compute, (rabbit, mapped) = next(iter(moved.items()))
    where = (
        f"{rabbit}'s Storage no longer lists it, the mapping puts it behind {rabbit}"
        if mapped == "-"
        else f"{rabbit}'s Storage lists it, the mapping puts it behind {mapped or 'no rabbit'}"
    )
    why = (
        f"the rabbitmapping disagrees with the Storages on {len(moved)} compute(s) "
        f"({encode_hostlist(list(moved))}; e.g. {compute}: {where}): their #DW jobs are "
        "refused in Setup; rebuild it (`coral2-pipeline rabbitmapping --from-storages`) "
        "and restart the workers"
    )
    return [Flag(WARNING, why)]


def _overdue(names: list[str], resend_after_s: float) -> str:
    tasks = ", ".join(sorted(set(names)))
    return (
        f"sent tasks ({tasks}) have had no outcome for over {resend_after_s:.0f} s "
        "(pipeline.resend_after), so they are being sent again: are the workers of every "
        "queue running (`coral2-pipeline status` shows each queue's latest heartbeat; node tasks "
        "need their node's node-worker)? A node prolog waiting for its mounts may run that long."
    )


def _ago(now: float, at: float) -> str:
    return f"{max(now - at, 0.0):.1f} s ago"

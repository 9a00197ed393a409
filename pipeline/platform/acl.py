"""Redis ACL users by role, as narrow as kombu's Redis transport allows.

``coral2-pipeline redis-acl`` prints them as a Redis ACL file (``aclfile``);
``make demo`` runs with them. Each role is a user of its own, so that Redis
names the process in ``CLIENT LIST`` and ``ACL LOG``, and each can be
rotated or switched off alone:

* ``management`` — Celery workers, beat, the command line, the hooks: the pipeline's
  keys alone (the job store, every queue of the pipeline's, kombu's bindings, the
  tasks' results, remote control's replies) and
  Celery's channels (events, remote control, results); no other key a Redis shared
  with another application holds, no administrative or dangerous command.
* ``watcher`` and ``bridge`` — each the keys of the job store it writes and reads, by
  name (:func:`watcher_keys`, :func:`bridge_keys`), and what sending a task writes: the
  ledger, the timelines, the lifecycle and housekeeping queues and their kombu bindings.
  Neither may change a job record, a lock or another's keys, nor run ``EVAL`` (the
  store's scripts by ``EVALSHA``, each call held to these keys): no channel, no timeouts
  or node queue, no result.
* ``node-<host>`` — one user per node worker: its own queue, an append-only right on
  its own answers stream (its answers and
  its dead letters), the verdicts on its own jobs, results; no job store, no other
  queue or node's key, nothing shared it can write, no kombu binding, no script.
* ``monitoring`` — ``coral2-pipeline status`` and ``deadletters``, a Redis
  exporter: read-only commands on every key.
* ``sentinel`` and ``replica`` — Redis Sentinel's user on the servers it watches, and the
  user a replica replicates as (``masteruser``): the commands Redis documents for each,
  no key.
* ``redis-exporter`` — Prometheus's redis_exporter: ``INFO``, the slow log, latency,
  ``CLIENT LIST``; no key, no channel, no ``CONFIG GET``.
* ``flower`` — ``coral2-pipeline flower``: the monitoring role's reads, and what
  kombu needs to receive the workers' events: its binding to the ``celeryev``
  exchange (three keys, by kombu's script), a pattern subscription to that exchange's
  channel, and a publish on the workers' control channel (the receiver's wake-up
  broadcast). Flower holds no key, so the workers refuse every control command it
  sends; they obey only commands signed with the management key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from urllib.parse import urlparse

from pipeline.model.hostlist import check_hostname
from pipeline.model.numbers import MAX_COUNT, natural_or_none
from pipeline.platform.node_results import result_pattern
from pipeline.settings import Settings

ROLES = (
    "management",
    "watcher",
    "bridge",
    "node",
    "monitoring",
    "flower",
    "redis-exporter",
    "sentinel",
    "replica",
)

#: What Redis Sentinel sends the servers it watches (Redis's documented rules for it).
SENTINEL_COMMANDS = (
    "+multi +slaveof +ping +exec +subscribe +config|rewrite +role +publish +info "
    "+client|setname +client|kill +script|kill"
)
#: What a replica sends its primary (``masteruser``): the replication stream alone.
REPLICA_COMMANDS = "+psync +replconf +ping"

#: What oliver006's redis_exporter reads: the server's figures, the slow log and latency,
#: the clients; no key at all. Not ``CONFIG GET``: Redis's ACL cannot grant it for some
#: settings and not others, and ``CONFIG GET masterauth`` (or ``requirepass``) would hand
#: this user a password; run redis_exporter with ``--config-command=-`` (maxmemory and
#: maxclients are in INFO).
REDIS_EXPORTER_COMMANDS = (
    "+info +slowlog|get +slowlog|len +latency|latest +latency|histogram "
    "+client|list +dbsize +memory|stats"
)

#: What a full member of the pipeline may not do: administer Redis.
NO_ADMIN = "+@all -@admin -@dangerous +info +client|setname +client|id +client|list"

#: What every client needs to log in and speak the protocol.
CONNECTION = "+hello +auth +ping +select +client|setname +client|id"

#: What a node worker may send with no key: to log in and speak the protocol, and the
#: transaction its result store wraps its SET and PUBLISH in. No SELECT (but of the
#: broker's own database, :func:`node_rules`).
NODE_CONNECTION = "+hello +auth +ping +client|setname +client|id +multi +exec +discard"
#: Its own task queue: kombu's blocking read, and the LPUSH that puts back, at shutdown,
#: what it took and did not run. Nothing that could make the key other than a list.
NODE_QUEUE_COMMANDS = "+brpop +lpush"
#: Its own answers stream: its answers and its dead letters, appended, never read.
NODE_ANSWERS_COMMANDS = "+xadd"
#: Its own heartbeat: set with its expiry, and deleted as it stops.
NODE_ALIVE_COMMANDS = "+set +del"
#: The verdicts on its own jobs, read by its per-rank prolog (prolog.d).
NODE_VERDICT_COMMANDS = "+get"
#: Their wake-up lists: waited on, and the wake-up passed on to the next waiter.
NODE_WAKE_COMMANDS = "+blpop +rpush"
#: The result of an operator's node task asked of it (``node.cxi_list``, ``node.cxi_clean``,
#: ``node.ping``): Celery's backend reads the key (a stored success stands), then writes and
#: publishes the result.
NODE_RESULT_COMMANDS = "+get +set +setex +publish"
#: Every command a node user may send, on some key or none (``select`` and ``client`` by
#: their first argument only).
NODE_GRANTED = frozenset(
    word.lstrip("+").split("|")[0]
    for rules in (
        NODE_CONNECTION,
        "+select",
        NODE_QUEUE_COMMANDS,
        NODE_ANSWERS_COMMANDS,
        NODE_VERDICT_COMMANDS,
        NODE_WAKE_COMMANDS,
        NODE_RESULT_COMMANDS,
    )
    for word in rules.split()
)


def broker_db(url: str) -> int:
    """The Redis database number of a ``redis://`` or ``sentinel://`` broker URL."""
    path = urlparse(url.split(";", 1)[0].strip()).path.strip("/")
    return natural_or_none(path, most=MAX_COUNT) or 0


def node_user(host: str) -> str:
    """The Redis user of ``host``'s node worker: ``node-<host>``."""
    return f"node-{host}"


def node_selectors(settings: Settings, hosts: Iterable[str]) -> list[str]:
    """The keys a node worker serving ``hosts`` may reach, each kind with only the
    commands its use needs (a Redis 7 selector a kind of key): no command of one kind
    reaches a key of another, so no node can make a key the management side reads in
    batches the wrong type, nor write any key of another node's. A selector names the
    kind's keys of every host served, as one blocking read waits on all their queues."""
    p = settings.pipeline
    hosts = [check_hostname(host) for host in hosts]

    def kind(patterns: list[str], commands: str) -> str:
        return f"({' '.join(patterns)} {commands})"

    results = [result_pattern(h) for h in hosts]
    return [
        # its queue (no kombu binding: nobody declares a node queue, and messages reach
        # it through the anonymous exchange)
        kind([f"~{p.queues.node_prefix}{h}" for h in hosts], NODE_QUEUE_COMMANDS),
        # its answers and its dead letters: appended to its own stream, never read; what
        # XADD's arguments can do there (an ID at the end, MAXLEN 0) it does to itself
        kind([f"%W~{p.key_prefix}:answers:{h}" for h in hosts], NODE_ANSWERS_COMMANDS),
        # its heartbeat, which status and the exporter read (pipeline.store.census)
        kind([f"%W~{p.key_prefix}:node-alive:{h}" for h in hosts], NODE_ALIVE_COMMANDS),
        # the verdicts on its own jobs, which its per-rank prolog (prolog.d) waits for, and
        # their wake-up lists (pipeline.node_prologs)
        kind([f"%R~{p.key_prefix}:release:{h}:*" for h in hosts], NODE_VERDICT_COMMANDS),
        kind([f"~{p.key_prefix}:release-wake:{h}:*" for h in hosts], NODE_WAKE_COMMANDS),
        # the results of the operator's node tasks asked of it (node_results)
        kind([f"~{r}" for r in results] + [f"&{r}" for r in results], NODE_RESULT_COMMANDS),
    ]


def node_rules(settings: Settings, hosts: Iterable[str]) -> str:
    """The rules of a node worker's user serving ``hosts`` (after ``reset``)."""
    db = broker_db(settings.pipeline.broker_url)
    root = f"resetkeys resetchannels {NODE_CONNECTION} +select|{db}"
    return " ".join([root, *node_selectors(settings, hosts)])


#: What the watcher and the bridge may send: data commands on their keys, transactions,
#: the store's scripts by digest (each command in them held to the same keys), and INFO
#: (the store's generation reads ``run_id``); no EVAL, no administrative command.
SENDER_COMMANDS = (
    "+@read +@write +@transaction -@admin -@dangerous +evalsha +script|load +info -keys -scan"
)


def sender_keys(settings: Settings) -> list[str]:
    """What sending a task writes, for the watcher and the bridge alike: the ledger (with
    the deadline clock its script rebases after a clock step), the job's timeline, the
    store's epoch, the lifecycle and housekeeping queues with their priority lists, and
    kombu's bindings of those two queues (a send declares its queue)."""
    p = settings.pipeline
    queues = [p.queues.lifecycle, p.queues.housekeeping]
    keys = [
        f"~{p.key_prefix}:{name}"
        for name in ("ledger", "ledger-due", "deadlines", "deadlines:clock", "timeline:*", "epoch")
    ]
    keys += [f"~{q}*" for q in queues]
    keys += [f"~_kombu.binding.{q}" for q in queues]
    keys += [f"~_kombu.binding_permanent.{q}" for q in queues]
    return keys


def watcher_keys(settings: Settings) -> list[str]:
    """The watcher's own keys (``pipeline.store.watch``): its lease, each watch's resume
    point, the Workflow events it noted, the observes it owes and their resync times, the
    rabbits' health it reads from Storages; with :func:`sender_keys`."""
    p = settings.pipeline.key_prefix
    own = (
        "watcher-leader",
        "watch-rv:*",
        "workflow-seen",
        "observe-pending:*",
        "resync-due",
        "rabbits",
    )
    return [f"~{p}:{name}" for name in own] + sender_keys(settings)


def bridge_keys(settings: Settings) -> list[str]:
    """The bridge's keys: the outbox it delivers (a consumer group's reads, acks and
    deletes), its view of Flux's jobs and resources, Flux's refusals and the dead letters
    it sets aside; read only, the job records, the VNI pool and the verdicts it answers
    ``dws.*`` requests and rebuilds from; with :func:`sender_keys`."""
    p = settings.pipeline.key_prefix
    own = (
        "outbox",
        "flux-jobs",
        "flux-jobs-synced",
        "resource-eventlog",
        "resource-R",
        "resource-epoch",
        "flux-refusals",
        "deadletters",
        "deadletters:count",
    )
    read = ("job:*", "jobs", "vnipool", "vnipool:*", "release:*")
    return (
        [f"~{p}:{name}" for name in own]
        + [f"%R~{p}:{name}" for name in read]
        + sender_keys(settings)
    )


def management_keys(settings: Settings) -> str:
    """The keys and channels of the management side (Celery workers, beat, the command
    line, the hooks): the job store, the pipeline's queues (nodes' included) with their
    priority lists, kombu's binding tables, the tasks' results, and remote control's
    reply queues; Celery's channels for events, remote control and results."""
    p = settings.pipeline
    queues = p.queues
    db = broker_db(p.broker_url)
    keys = [
        f"~{p.key_prefix}:*",
        *(f"~{name}*" for name in (queues.lifecycle, queues.timeouts, queues.housekeeping)),
        f"~{queues.node_prefix}*",
        "~_kombu.binding*",
        # the results; each worker's remote-control mailbox and each caller's reply
        # queue (kombu sizes them: LLEN); an event receiver's queue
        "~celery-task-meta-* ~*.celery.pidbox* ~celeryev.*",
    ]
    # kombu's fanout exchanges are channels named /<db>.<exchange>, events per routing
    # key under them; the result backend publishes each result on its own key's channel
    # PSUBSCRIBE is allowed a pattern only when the ACL names that pattern literally:
    # kombu's subscriptions to the control channel, and to the events (gossip)
    channels = (
        f"&/{db}.celeryev* &/{db}.celery.pidbox* &celery-task-meta-* "
        f"&/{db}.celery.pidbox &/{db}.celeryev/* &/{db}.celeryev/worker.*"
    )
    return " ".join([*keys, "resetchannels", channels])


def rules(role: str, settings: Settings, hosts: Iterable[str] = ()) -> str:
    """The ACL rules (after ``reset``) of ``role``; a node user's for ``hosts``."""
    if role == "management":
        return f"{management_keys(settings)} {NO_ADMIN}"
    if role in ("watcher", "bridge"):
        # no channel (they neither receive events nor control workers), no timeouts or
        # node queue, no result, no job record to change
        keys = watcher_keys(settings) if role == "watcher" else bridge_keys(settings)
        return f"resetchannels {' '.join(keys)} {CONNECTION} {SENDER_COMMANDS}"
    if role == "node":
        hosts = list(hosts)
        if not hosts:
            raise ValueError("a node user needs the nodes it serves")
        return node_rules(settings, hosts)
    if role == "monitoring":
        # EVALSHA_RO: the node census (pipeline.store.census), a script Redis itself
        # keeps from writing; CLIENT LIST: who is connected, for an operator's eyes;
        # MULTI/EXEC: reads taken together (the VNI pool's), which need no write
        return (
            f"%R~* {CONNECTION} +@read -@dangerous +info +scan +client|list +multi +exec "
            "+eval_ro +evalsha_ro"
        )
    if role == "sentinel":
        return f"allchannels resetkeys +hello +auth {SENTINEL_COMMANDS}"
    if role == "replica":
        return f"resetkeys resetchannels +hello +auth {REPLICA_COMMANDS}"
    if role == "redis-exporter":
        return f"resetkeys resetchannels {CONNECTION} {REDIS_EXPORTER_COMMANDS}"
    if role == "flower":
        db = broker_db(settings.pipeline.broker_url)
        # kombu binds the event receiver's queue to the celeryev exchange (SADD and ZADD by
        # its script) and PSUBSCRIBEs the exchange's channel (Redis takes a pattern only
        # when the ACL names it literally); the receiver wakes the workers up with an
        # (unsigned, so refused) broadcast on the control channel
        return (
            f"resetchannels &/{db}.celeryev/* &/{db}.celeryev/worker.* &/{db}.celery.pidbox "
            f"%R~* ~_kombu.binding.celeryev ~_kombu.binding_permanent.celeryev "
            f"~_kombu.binding_deadlines {CONNECTION} "
            "+@read -@dangerous +info +scan +client|list "
            "+psubscribe +punsubscribe +evalsha +script|load +script|exists +multi +exec "
            "+sadd +srem +zadd +time +publish"
        )
    raise ValueError(f"unknown role {role!r}; the roles are {', '.join(ROLES)}")


def _user(name: str, password: str, rule: str) -> str:
    digest = hashlib.sha256(password.encode()).hexdigest()
    return f"user {name} reset on #{digest} {rule}"


def acl_file(
    settings: Settings,
    passwords: Mapping[str, str],
    *,
    nodes: Mapping[str, tuple[Iterable[str], str]] | None = None,
    admin: str | None = None,
) -> str:
    """An ACL file: the users of ``passwords`` (role → password), each with its role's
    rules; the node users of ``nodes`` (user → the hosts its worker serves, and its
    password: one user per node in production, :func:`node_user`); each holds the
    password's SHA-256 only. With ``admin`` (its password), a user ``admin`` that may do
    anything.

    The ``default`` user has no password, so no connection can log in as it, and every
    permission: Redis replays the append-only file as that user, and releases with
    redis/redis#14541 (7.0 and 7.2 among them) re-check each replayed ``EXEC`` against
    its rules, so a ``default`` user switched off or narrowed silently drops every
    transaction of the file when Redis restarts — job records, ledger entries, locks."""
    lines = ["user default on resetpass resetkeys resetchannels ~* &* +@all"]
    if admin is not None:
        lines.append(_user("admin", admin, "~* &* +@all"))
    for role, password in passwords.items():
        if role == "node":
            raise ValueError("node users are given per node (nodes=), not as a role")
        lines.append(_user(role, password, rules(role, settings)))
    for user, (hosts, password) in (nodes or {}).items():
        lines.append(_user(user, password, rules("node", settings, hosts)))
    return "\n".join(lines) + "\n"

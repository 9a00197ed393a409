"""Redis ACL users by role, as narrow as kombu's Redis transport allows.

``coral2-pipeline redis-acl`` prints them as a Redis ACL file (``aclfile``);
``make demo`` runs with them. Each role is a user of its own, so that Redis
names the process in ``CLIENT LIST`` and ``ACL LOG``, and each can be
rotated or switched off alone:

* ``management`` — Celery workers, beat, the command line, the hooks: every
  key and channel, no administrative or dangerous command.
* ``watcher`` and ``bridge`` — the same rules: each writes the job store and
  sends tasks, which kombu's transport does with the same keys a worker uses
  (docs/security.md says why no narrower set works).
* ``node`` — a node worker: its own queue(s), a push-only right on the
  lifecycle queue for its answers, the kombu bookkeeping a consumer needs,
  results and dead letters; no job store, no other queue to read, nothing
  to delete.
* ``monitoring`` — ``coral2-pipeline status`` and ``deadletters``, a Redis
  exporter: read-only commands on every key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from pipeline.settings import Settings

ROLES = ("management", "watcher", "bridge", "node", "monitoring")

#: What a full member of the pipeline may not do: administer Redis.
NO_ADMIN = "+@all -@admin -@dangerous +info +client|setname +client|id"

#: What every client needs to log in and speak the protocol.
CONNECTION = "+hello +auth +ping +select +client|setname +client|id"

#: The commands kombu and Celery send for a consumer that does not sweep the unacked
#: index, a producer, the result of a task and a dead letter.
NODE_COMMANDS = (
    "+brpop +lpush +llen +smembers +sadd +multi +exec +discard +watch +unwatch "
    "+hset +hget +hdel +zadd +zrem +set +get +setex +publish +incr +ltrim"
)


def node_keys(settings: Settings, hosts: Iterable[str] | None) -> str:
    """The keys a node worker for ``hosts`` (None: any node) may reach."""
    p = settings.pipeline
    queues = p.queues
    if hosts is None:
        own = [f"~{queues.node_prefix}*", f"~_kombu.binding.{queues.node_prefix}*"]
        own.append(f"~_kombu.binding_permanent.{queues.node_prefix}*")
    else:
        own = []
        for host in hosts:
            own += [f"~{queues.node_prefix}{host}", f"~_kombu.binding.{queues.node_prefix}{host}"]
            own.append(f"~_kombu.binding_permanent.{queues.node_prefix}{host}")
    return " ".join(
        [
            *own,
            # its answers: push, never read
            f"%W~{queues.lifecycle}",
            # kombu's ack bookkeeping: one hash and one index for every consumer
            "~unacked ~unacked_index",
            # the results of the operator's node tasks (cxi_list, cxi_clean, ping)
            "~celery-task-meta-* &celery-task-meta-*",
            # a message it cannot read, set aside
            f"%W~{p.key_prefix}:deadletters*",
        ]
    )


def rules(role: str, settings: Settings, hosts: Iterable[str] | None = None) -> str:
    """The ACL rules (after ``reset``) of ``role``."""
    if role in ("management", "watcher", "bridge"):
        return f"~* &* {NO_ADMIN}"
    if role == "node":
        return f"resetchannels {node_keys(settings, hosts)} {CONNECTION} {NODE_COMMANDS}"
    if role == "monitoring":
        return f"%R~* {CONNECTION} +@read -@dangerous +info +scan"
    raise ValueError(f"unknown role {role!r}; the roles are {', '.join(ROLES)}")


def acl_file(
    settings: Settings,
    passwords: Mapping[str, str],
    *,
    hosts: Iterable[str] | None = None,
    admin: str | None = None,
) -> str:
    """An ACL file: the users of ``passwords`` (role → password), each with its role's
    rules and the password's SHA-256 only; with ``admin`` (its password), a user
    ``admin`` that may do anything.

    The ``default`` user has no password, so no connection can log in as it, and every
    permission: Redis replays the append-only file as that user, and releases with
    redis/redis#14541 (7.0 and 7.2 among them) re-check each replayed ``EXEC`` against
    its rules, so a ``default`` user switched off or narrowed silently drops every
    transaction of the file when Redis restarts — job records, ledger entries, locks."""
    lines = ["user default on resetpass resetkeys resetchannels ~* &* +@all"]
    if admin is not None:
        digest = hashlib.sha256(admin.encode()).hexdigest()
        lines.append(f"user admin reset on #{digest} ~* &* +@all")
    hosts = list(hosts) if hosts is not None else None
    for role, password in passwords.items():
        digest = hashlib.sha256(password.encode()).hexdigest()
        lines.append(f"user {role} reset on #{digest} {rules(role, settings, hosts)}")
    return "\n".join(lines) + "\n"

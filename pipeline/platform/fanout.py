"""A job's node messages as signed manifests: one signature for a node task on many nodes.

A whole machine's prolog is one node task with the same arguments on thousands of
nodes. Sent as Celery sends a task, each node's message is built, signed and published
on its own, and that cost grows with the job: most of it Celery's message building and
the signature. Here the sends of a job phase are grouped by task and arguments (a
node's hostname aside), and each group goes out as a **manifest**:

* one body, signed once: Celery's protocol-2 ``[args, kwargs, embed]``, whose claim
  (:data:`pipeline.platform.signing.CLAIM`) names the task, the manifest's id and the
  nodes it is for, as a hostlist (``{"task": "node.prolog", "id": M, "nodes":
  "compute[1-11136]"}``); the kwargs name no hostname;
* one Celery message per node, on that node's queue, carrying that same body under the
  task id ``M:<node>``, each noted in the ledger under that id with the node's whole
  arguments. The ledger sends again the copies of a manifest that are due as that
  manifest again, signed once for just their nodes, each copy under its id as before
  (:func:`pipeline.platform.sending.resend_copies`).

A node worker runs a copy only if the management side signed it, its task is a node
task, and its id names a node of the signed hostlist: a node the worker serves and the
queue it came in on (:func:`pipeline.platform.signing.manifest_host`, and the node
worker's own checks). The copies are pushed straight onto the nodes' lists in pipelined
batches, as kombu's Redis transport publishes through the anonymous exchange.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from celery import Celery
from celery.app.amqp import AMQP
from kombu.serialization import dumps

from pipeline.model.hostlist import encode_hostlist
from pipeline.platform.signing import CLAIM, COPY_SEPARATOR, NODES
from pipeline.store.backlog import SENT_HEADER
from pipeline.store.connection import refused_keys

#: How many copies go to the broker in one pipelined write.
PUSH_BATCH = 1000
#: kombu's properties of a message published to a Redis list (persistent, priority 0).
_DELIVERY = {"delivery_mode": 2, "priority": 0, "body_encoding": "base64"}
#: Placeholders of a copy's task id and queue in the encoded message (no id, hostname
#: or base64 body holds a NUL).
_ID, _QUEUE = "\u0000id\u0000", "\u0000queue\u0000"
#: The same as ``json.dumps`` writes them.
_ID_JSON, _QUEUE_JSON = json.dumps(_ID)[1:-1], json.dumps(_QUEUE)[1:-1]


@dataclass
class Group:
    """The sends of one node task with the same arguments: one manifest."""

    name: str
    kwargs: dict[str, Any]
    hosts: list[str] = field(default_factory=list)


def grouped(sends: Sequence[tuple[str, str, dict[str, Any]]]) -> list[Group]:
    """The sends ``(node, task name, kwargs)`` grouped by task and arguments; each
    group's kwargs without ``hostname``, which each copy's id carries instead."""
    groups: dict[tuple[str, str], Group] = {}
    for node, name, kwargs in sends:
        rest = {k: v for k, v in kwargs.items() if k != "hostname"}
        key = (name, json.dumps(rest, sort_keys=True, default=repr))
        group = groups.get(key)
        if group is None:
            group = groups[key] = Group(name, rest)
        group.hosts.append(node)
    return list(groups.values())


def copy_id(manifest_id: str, node: str) -> str:
    """The task id of the copy of manifest ``manifest_id`` for ``node``."""
    return f"{manifest_id}{COPY_SEPARATOR}{node}"


def manifest_of(task_id: str, hostname: str) -> str | None:
    """The manifest whose copy for ``hostname`` has the id ``task_id``; None when that id
    is no such copy's (an ordinary message's)."""
    manifest_id, separator, node = task_id.rpartition(COPY_SEPARATOR)
    return manifest_id if separator and manifest_id and node == hostname else None


@dataclass(frozen=True)
class Manifest:
    """One group's signed body and the headers its copies share."""

    id: str
    group: Group
    content_type: str
    content_encoding: str
    body: str  # base64 of the serialized (signed) body, as kombu stores it
    headers: dict[str, Any]

    def copies(self, prefix: str) -> list[tuple[str, str, bytes]]:
        """Each node's ``(task id, queue, message as kombu's Redis transport stores it)``.

        The copies differ only in their task id (also their delivery tag, unique as it
        is) and their queue: the message is encoded once around placeholders, and each
        copy is that text with them filled in (a hostname needs no JSON escaping:
        :func:`pipeline.platform.routing.node_queue` admits none that would)."""
        headers = {**self.headers, "id": _ID, "root_id": _ID}
        properties = {
            "correlation_id": _ID,
            **_DELIVERY,
            "delivery_info": {"exchange": "", "routing_key": _QUEUE},
            "delivery_tag": _ID,
        }
        message = {
            "body": self.body,
            "content-encoding": self.content_encoding,
            "content-type": self.content_type,
            "headers": headers,
            "properties": properties,
        }
        template = json.dumps(message)
        out = []
        for node in self.group.hosts:
            task_id = copy_id(self.id, node)
            queue = prefix + node
            raw = template.replace(_ID_JSON, task_id).replace(_QUEUE_JSON, queue)
            out.append((task_id, queue, raw.encode()))
        return out


def manifest(
    app: Celery, group: Group, manifest_id: str | None = None, *, first_sent: float
) -> Manifest:
    """Build and sign ``group``'s manifest with ``app``'s serializer (its key): a new one,
    or, given ``manifest_id``, that manifest again for ``group``'s nodes (a resend: each
    copy keeps the id it was noted under). ``first_sent``: when the copies' ledger
    entries were first sent (:data:`pipeline.store.backlog.SENT_HEADER`)."""
    manifest_id = manifest_id or str(uuid.uuid4())
    shown, limit = repr(group.kwargs), AMQP.kwargsrepr_maxsize
    message = app.amqp.create_task_message(
        manifest_id,
        group.name,
        (),
        group.kwargs,
        ignore_result=True,
        argsrepr="()",
        kwargsrepr=shown if len(shown) <= limit else shown[: limit - 3] + "...",
    )
    args, kwargs, embed = message.body
    claim = {"task": group.name, "id": manifest_id, NODES: encode_hostlist(group.hosts)}
    body = [list(args), kwargs, {**embed, CLAIM: claim}]
    content_type, content_encoding, data = dumps(body, serializer=app.conf.task_serializer)  # type: ignore[no-untyped-call]
    raw = data.encode(content_encoding) if isinstance(data, str) else data
    headers = {**message.headers, SENT_HEADER: first_sent}
    return Manifest(
        manifest_id,
        group,
        content_type,
        content_encoding,
        base64.b64encode(raw).decode("ascii"),
        headers,
    )


def push(producer: Any, copies: Sequence[tuple[str, str, bytes]]) -> list[str]:
    """Put each copy on its queue's list, :data:`PUSH_BATCH` to a pipelined write, as
    kombu's Redis channel puts a message (``LPUSH`` onto the queue of priority 0).

    A queue whose key is not a list (a node's own queue, which only that node could have
    made something else) holds no message: it is deleted and its copy pushed again, and
    the rest of the batch is not held up; returns those queues, for the caller to flag
    their nodes."""
    channel = producer.channel
    retyped: list[str] = []
    with channel.conn_or_acquire() as client:
        for start in range(0, len(copies), PUSH_BATCH):
            batch = [
                (channel._q_for_pri(q, 0), raw) for _t, q, raw in copies[start : start + PUSH_BATCH]
            ]
            pipe = client.pipeline(transaction=False)
            for queue, raw in batch:
                pipe.lpush(queue, raw)
            found = pipe.execute(raise_on_error=False)
            wrong = set(refused_keys([q for q, _ in batch], found))
            if not wrong:
                continue
            pipe = client.pipeline(transaction=True)
            pipe.delete(*wrong)
            for queue, raw in batch:
                if queue in wrong:
                    pipe.lpush(queue, raw)
            pipe.execute()
            retyped += sorted(wrong)
    return retyped

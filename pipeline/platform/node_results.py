"""The results of the operator's node tasks (``node.cxi_list``, ``node.cxi_clean``,
``node.ping``), each under a key only the node asked may write.

Celery's Redis backend stores a task's result under ``celery-task-meta-<task id>`` and
publishes it on the channel of that name. A task id of the form
``node:<host>:<uuid>`` puts the result of a task asked of ``host`` where that node's
Redis user alone may write (``pipeline.platform.acl``: ``~celery-task-meta-node:<host>:*``),
so that no node can answer for another node's task. Hostnames hold no ``:``, so no
node's prefix is another's.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from celery import Celery
from celery.result import AsyncResult

#: Where the node task ids of a host begin; ``celery-task-meta-`` before it is the key.
PREFIX = "node:"


def node_task_id(host: str) -> str:
    """A fresh id for a task asked of ``host`` whose result is awaited."""
    return f"{PREFIX}{host}:{uuid.uuid4().hex}"


def result_pattern(host: str) -> str:
    """The result keys (and channels) ``host``'s node worker may write."""
    return f"celery-task-meta-{PREFIX}{host}:*"


def ask(
    app: Celery,
    name: str,
    host: str,
    queue: str,
    *,
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
) -> AsyncResult:
    """Send node task ``name`` to ``host``'s ``queue``, its result awaited under a key that
    node alone may write."""
    return app.send_task(
        name, args=list(args), kwargs=kwargs, queue=queue, task_id=node_task_id(host)
    )

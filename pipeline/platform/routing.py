"""Where tasks go: the router of the fixed queues and the node queues' names.

Shared by the pipeline's workers and the node workers (which must not import
:mod:`pipeline.tasks`).
"""

from __future__ import annotations

from typing import Any

from pipeline.model.hostlist import HOSTNAME

NODE_QUEUE_PREFIX = "node."
#: The tasks the hooks, the bridge and the watcher send, and the logical queue of each:
#: a sender that registers no task (``create_app(tasks=False)``) sends them by name to
#: the queue the settings give it (a test holds this to each task's own queue).
SENT_BY_NAME: dict[str, str] = {
    "dws.create": "lifecycle",
    "dws.setup": "lifecycle",
    "dws.post_run": "lifecycle",
    "dws.epilog_lost": "lifecycle",
    "dws.teardown": "lifecycle",
    "dws.abort": "lifecycle",
    "dws.observe": "lifecycle",
    "job.run": "lifecycle",
    "job.cleanup": "lifecycle",
    "job.restore": "lifecycle",
    "storage.observe": "housekeeping",
}


class QueueRouter:
    """Celery router: a task's logical queue → the queue name the settings give it.

    Node tasks have no default route; they are sent with
    ``apply_async(queue=node_queue(hostname))``.
    """

    def __init__(self, names: dict[str, str], node_prefix: str = NODE_QUEUE_PREFIX) -> None:
        self.names = names
        self.node_prefix = node_prefix

    def __call__(
        self, name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **_: Any
    ) -> dict[str, str] | None:
        """Return the route of ``task``."""
        logical = getattr(task, "logical_queue", None)
        if logical in self.names:
            return {"queue": self.names[logical]}
        return None


def node_queue(hostname: str) -> str:
    """Return the queue of ``hostname``'s node worker: ``node.<hostname>``."""
    if not isinstance(hostname, str) or not HOSTNAME.fullmatch(hostname):
        raise ValueError(f"invalid hostname for a node queue: {hostname!r}")
    return NODE_QUEUE_PREFIX + hostname

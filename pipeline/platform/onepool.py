"""One Redis connection for every command a process sends, besides its blocking read.

A node worker runs on each of up to 11,136 computes, so each connection it
holds is eleven thousand at the broker. Celery opens one pool per kombu
channel (the consumer's, each producer's) and one for the result backend,
and redis-py grows each pool by a connection whenever two threads send at
once. In one-connection mode (:data:`ONE_CONNECTION_OPTION`, which the node
worker sets) every channel's command pool and the result backend's pool are
one process-wide :class:`redis.BlockingConnectionPool` of size one per
server: threads take turns on it, which a node's few messages a job never
notice. The consumer's blocking read (BRPOP) keeps its own connection, as
it must. Two in all.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import redis
from celery.backends.redis import RedisBackend

#: The broker transport option that turns one-connection mode on.
ONE_CONNECTION_OPTION = "coral2_one_connection"

#: How long a thread waits for the one connection before it counts as unreachable (s).
WAIT_S = 60.0

_POOLS: dict[tuple[Any, ...], redis.BlockingConnectionPool] = {}
_LOCK = threading.Lock()


def _server(params: Mapping[str, Any]) -> tuple[Any, ...]:
    """What names one server and one login: connections to it are interchangeable."""
    return (
        params.get("host"),
        params.get("port"),
        params.get("path"),
        int(params.get("db") or 0),
        params.get("username"),
        params.get("password"),
    )


def shared_pool(params: Mapping[str, Any]) -> redis.BlockingConnectionPool:
    """The process's pool of one connection to the server ``params`` name."""
    key = _server(params)
    with _LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            kwargs = {k: v for k, v in params.items() if k != "max_connections"}
            pool = redis.BlockingConnectionPool(  # type: ignore[no-untyped-call]
                max_connections=1, timeout=WAIT_S, **kwargs
            )
            _POOLS[key] = pool
        return pool


def is_shared(pool: object) -> bool:
    """Whether ``pool`` is one of the process-wide pools (never closed by one user)."""
    with _LOCK:
        return any(pool is shared for shared in _POOLS.values())


class OnePoolBackend(RedisBackend):  # type: ignore[misc]
    """Celery's Redis result backend on the process's one connection.

    Named in ``result_backend`` as ``pipeline.platform.onepool:OnePoolBackend+redis://…``
    (Celery's ``backend+url`` form).
    """

    def _get_pool(self, **params: Any) -> Any:
        return shared_pool(params)

"""Kombu's Redis transports, with one Redis client per channel instead of one per command.

Kombu 5.7's Redis channel builds a new ``redis.Redis`` for every command it
sends outside its polling connection (``Channel.conn_or_acquire``): each
delivery's unacked bookkeeping, each ack, each publish — task events
included. Building one fills a dictionary of ~170 response callbacks, and
in a worker that cost lands on the consumer thread, the one that feeds
every task thread; ``make bench`` prints the client CPU of one message
put, got and acked through each transport. The clients all share the
channel's connection pool anyway, and a ``redis.Redis`` is safe to share between
threads (each command checks a connection out of the pool), so these
channels keep one and use it for every command.

The client follows the pool: when kombu drops its pool (a lost connection,
a fork), the next command builds a client for the new one. Everything else
— the unacked index, visibility timeout, restore at shutdown, Sentinel
failover — is kombu's, unchanged.

``celery_config`` selects these for ``redis://`` and ``sentinel://`` broker
URLs. A ``rediss://`` URL keeps kombu's own transport: kombu derives its
TLS set-up from that scheme, which a transport named by import path would
lose.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from kombu.transport import redis as kombu_redis

#: broker URL scheme → the transport Celery should use (``broker_transport``)
TRANSPORTS = {
    "redis": "pipeline.platform.broker:RedisTransport",
    "sentinel": "pipeline.platform.broker:SentinelTransport",
}


def transport_for(broker_url: str) -> str | None:
    """Return the ``broker_transport`` for ``broker_url``; None keeps kombu's choice."""
    # a failover list ("redis://a;redis://b") shares one scheme: kombu allows no mix
    return TRANSPORTS.get(urlparse(broker_url.split(";", 1)[0].strip()).scheme)


class _SharedClient:
    """Mixin for a kombu Redis channel: one client per connection pool."""

    _shared_client: Any = None

    if TYPE_CHECKING:  # kombu's, through the channel this is mixed into

        @property
        def pool(self) -> Any: ...

        def _create_client(self, asynchronous: bool = False) -> Any: ...

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        if client is not None:
            yield client
            return
        shared = self._shared_client
        if shared is None or shared.connection_pool is not self.pool:
            # two threads may both get here: each builds one, the last one kept — harmless
            shared = self._shared_client = self._create_client()
        yield shared


class RedisChannel(_SharedClient, kombu_redis.Channel):
    """Kombu's Redis channel sharing one client (module docstring)."""


class SentinelChannel(_SharedClient, kombu_redis.SentinelChannel):
    """Kombu's Sentinel channel sharing one client (module docstring)."""


class RedisTransport(kombu_redis.Transport):
    Channel = RedisChannel


class SentinelTransport(kombu_redis.SentinelTransport):
    Channel = SentinelChannel

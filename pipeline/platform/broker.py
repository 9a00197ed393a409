"""Kombu's Redis transports, with one Redis client per channel instead of one per command.

Kombu 5.7's Redis channel builds a new ``redis.Redis`` for every command it
sends outside its polling connection (``Channel.conn_or_acquire``): each
publish, task events included. Building one fills a dictionary of ~170 response callbacks, and
in a worker that cost lands on the consumer thread, the one that feeds
every task thread; ``make bench`` prints the client CPU of one message
put, got and acked through each transport. The clients all share the
channel's connection pool anyway, and a ``redis.Redis`` is safe to share between
threads (each command checks a connection out of the pool), so these
channels keep one and use it for every command.

The client follows the pool: when kombu drops its pool (a lost connection,
a fork), the next command builds a client for the new one. Everything else
— restore at shutdown, Sentinel failover — is kombu's, unchanged.

The channels also read every message defensively (:class:`_SetAside`): an
item on a queue that is not a kombu message — not JSON, not its envelope —
is set aside as a dead letter (:mod:`pipeline.platform.deadletters`) where
kombu would raise out of the worker's event loop and stop the worker.

``celery_config`` selects these for ``redis://`` and ``sentinel://`` broker
URLs. A ``rediss://`` URL keeps kombu's own transport: kombu derives its
TLS set-up from that scheme, which a transport named by import path would
lose.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from queue import Empty
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from kombu.transport import redis as kombu_redis
from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import loads

from pipeline.platform.deadletters import set_aside
from pipeline.platform.onepool import ONE_CONNECTION_OPTION, is_shared, shared_pool

#: The transport option naming the deployment's key prefix, for dead letters.
PREFIX_OPTION = "coral2_key_prefix"

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


class _OneConnection:
    """Mixin for a kombu Redis channel: in one-connection mode (:mod:`.onepool`) its
    commands go over the process's one connection, and it keeps no idle connection of
    its own besides the consumer's blocking read."""

    if TYPE_CHECKING:  # kombu's, through the channel this is mixed into
        connection: Any
        keyprefix_fanout: str
        _pool: Any

        @property
        def async_pool(self) -> Any: ...

        def _connparams(self, asynchronous: bool = False) -> dict[str, Any]: ...

    _opening = False
    _one = False

    def __init__(self, connection: Any, *args: Any, **kwargs: Any) -> None:
        # decided once: a channel closing after its transport dropped the client still
        # knows (it then gets a connection error, below, which kombu's close ignores)
        self._one = bool(connection.client.transport_options.get(ONE_CONNECTION_OPTION))
        self._opening = True
        try:
            super().__init__(connection, *args, **kwargs)  # type: ignore[call-arg]
        finally:
            self._opening = False
        if self._one_connection():
            # kombu checked the server with a client of its polling pool, kept as the
            # one that polls: made on that pool again when this channel first polls
            self.__dict__.pop("client", None)

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous and self._opening and self._one_connection():
            # kombu's check at opening: over the one connection, not a polling one
            # that a channel which never polls (a producer's) would keep idle for life
            asynchronous = False
        return super()._create_client(asynchronous)  # type: ignore[misc]

    def _one_connection(self) -> bool:
        return self._one

    def _get_pool(self, asynchronous: bool = False) -> Any:
        if self.connection is None or self.connection.client is None:
            # Celery closes the consumer's connection after Redis went away, and the
            # channel, closing, would put the messages it took back: with no connection
            # they are left to the ledger, as after a crash
            raise kombu_redis.redis.ConnectionError("the broker connection is closed")  # type: ignore[attr-defined]
        if asynchronous or not self._one_connection():
            return super()._get_pool(asynchronous)  # type: ignore[misc]
        params = self._connparams()
        self.keyprefix_fanout = self.keyprefix_fanout.format(db=params["db"])  # as kombu's
        return shared_pool(params)

    def _disconnect_pools(self) -> None:
        if self._pool is not None and is_shared(self._pool):
            self._pool = None  # the process's: other channels are using it
        super()._disconnect_pools()  # type: ignore[misc]


class _SetAside:
    """Mixin for a kombu Redis channel: an item that is no message is a dead letter."""

    if TYPE_CHECKING:  # kombu's, through the channel this is mixed into
        sep: str
        client: Any
        connection: Any
        connection_errors: tuple[type[BaseException], ...]
        priority_steps: list[int]
        _queue_cycle: Any
        _in_poll: Any

        def conn_or_acquire(self, client: Any = None) -> Any: ...

        def _q_for_pri(self, queue: str, pri: int) -> str: ...

        def _maybe_update_queues_expire(self, client: Any, queue: str) -> None: ...

    def _message(self, item: bytes, queue: str) -> dict[str, Any] | None:
        """The envelope in ``item``, its routing key the queue it was read from (not the
        one its sender wrote into it: a node worker checks that a node's task came in on
        that node's queue); None (and a dead letter) when it is none."""
        try:
            payload = loads(bytes_to_str(item))  # type: ignore[no-untyped-call]
            if not isinstance(payload, dict):
                raise TypeError(f"a JSON {type(payload).__name__}, not an object")
            self.Message(payload, channel=self)  # type: ignore[attr-defined]  # as delivered
            info = payload["properties"].setdefault("delivery_info", {})
            if not isinstance(info, dict):
                raise TypeError("its delivery_info is not an object")
        except Exception as exc:  # anything kombu's own read would have raised
            prefix = self.connection.client.transport_options.get(PREFIX_OPTION)
            reason = f"not a kombu message: {type(exc).__name__}: {exc}"
            with self.conn_or_acquire() as client:
                set_aside(client, prefix, queue, item, reason)
            return None
        info["routing_key"] = queue
        return payload

    def _brpop_read(self, **options: Any) -> bool:
        # kombu's read (the blocking BRPOP's reply), decoding through _message
        try:
            try:
                reply = self.client.parse_response(self.client.connection, "BRPOP", **options)
            except self.connection_errors:
                self.client.connection.disconnect()  # the next poll reconnects
                raise
            if not reply:
                raise Empty()
            dest, item = reply
            queue = bytes_to_str(dest).rsplit(self.sep, 1)[0]  # type: ignore[no-untyped-call]
            self._queue_cycle.rotate(queue)
            payload = self._message(item, queue)
            if payload is not None:
                self.connection._deliver(payload, queue)
            return True
        finally:
            self._in_poll = None
            flush = getattr(self, "_flush_brpop_reauth", None)  # kombu ≥ 5.7
            if flush is not None:
                flush()

    def _get(self, queue: str, timeout: float | None = None) -> dict[str, Any]:
        with self.conn_or_acquire() as client:
            for pri in self.priority_steps:
                while item := client.rpop(self._q_for_pri(queue, pri)):
                    payload = self._message(item, queue)
                    if payload is not None:
                        self._maybe_update_queues_expire(client, queue)
                        return payload
            self._maybe_update_queues_expire(client, queue)
            raise Empty()


class RedisChannel(_SetAside, _OneConnection, _SharedClient, kombu_redis.Channel):
    """Kombu's Redis channel sharing one client, setting bad items aside (module docstring)."""


class SentinelChannel(_SetAside, _SharedClient, kombu_redis.SentinelChannel):
    """Kombu's Sentinel channel sharing one client, setting bad items aside."""


class RedisTransport(kombu_redis.Transport):
    Channel = RedisChannel


class SentinelTransport(kombu_redis.SentinelTransport):
    Channel = SentinelChannel

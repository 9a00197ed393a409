"""Redis connections from a URL: ``redis://``, ``rediss://`` (TLS), ``unix://`` and ``sentinel://``.

``sentinel://[:password@]host1:26379,host2:26379/<service>[?db=0&ssl=true]``
asks the Sentinels for the current master of ``<service>`` on every
reconnection, so a failover is followed without a restart.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

import redis
from redis.sentinel import Sentinel

from pipeline.errors import ConfigError
from pipeline.model.numbers import MAX_COUNT, natural, natural_or_none

T = TypeVar("T")


#: How long a command may wait for Redis's answer (s): a blocking read blocks for less.
SOCKET_TIMEOUT_S = 5.0


def connect(url: str, *, socket_timeout_s: float = SOCKET_TIMEOUT_S) -> redis.Redis:
    """Return a client for ``url``; nothing is sent until it is used."""
    if url.startswith("sentinel://"):
        return _sentinel(url, socket_timeout_s)
    try:
        return redis.Redis.from_url(
            url,
            socket_timeout=socket_timeout_s,
            socket_connect_timeout=socket_timeout_s,
            health_check_interval=30,
        )
    except ValueError as exc:
        raise ConfigError(
            f"invalid Redis URL {shown_url(url)!r}: {exc}; expected redis://host:port/db, "
            "rediss://..., unix:///path or sentinel://host:port,host:port/service"
        ) from exc


def shown_url(url: str) -> str:
    """``url`` as an error may show it: any password in it replaced by ``***``."""
    out = []
    for part in url.split(";"):
        head, sep, rest = part.partition("://")
        if sep:
            netloc, slash, path = rest.partition("/")
            info, at, hosts = netloc.rpartition("@")
            if at and ":" in info:
                info = info.split(":", 1)[0] + ":***"
            out.append(f"{head}{sep}{info}{at}{hosts}{slash}{path}")
        else:
            out.append(part)
    return ";".join(out)


def _sentinel(url: str, socket_timeout_s: float) -> redis.Redis:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    password = unquote(netloc[0].split(":", 1)[-1]) if len(netloc) == 2 else None
    hosts: list[tuple[str, int]] = []
    for item in netloc[-1].split(","):
        host, _, port = item.partition(":")
        if not host or (port and not (natural_or_none(port, most=65535) or 0) >= 1):
            raise ConfigError(
                f"invalid sentinel address {shown_url(item)!r} in {shown_url(url)!r}: "
                "expected host:port"
            )
        hosts.append((host, natural(port or "26379")))
    service = parts.path.strip("/")
    if not service:
        raise ConfigError(
            f"sentinel URL {shown_url(url)!r} names no service: sentinel://host:port/<service>"
        )
    query = parse_qs(parts.query)
    db_text = query.get("db", ["0"])[0]
    if natural_or_none(db_text, most=MAX_COUNT) is None:
        raise ConfigError(f"sentinel URL {shown_url(url)!r}: db must be a number, got {db_text!r}")
    sentinel = Sentinel(  # type: ignore[no-untyped-call, unused-ignore]
        hosts,
        socket_timeout=socket_timeout_s,
        sentinel_kwargs={"password": password} if password else None,
    )
    master: Any = sentinel.master_for(  # type: ignore[no-untyped-call, unused-ignore]
        service,
        socket_timeout=socket_timeout_s,
        password=password,
        db=natural(db_text, most=MAX_COUNT),
        ssl=query.get("ssl", ["false"])[0] == "true",
    )
    client: redis.Redis = master
    return client


def eval_in(pipe: Any, script: Any, keys: list[Any], args: list[Any]) -> None:
    """Queue ``script`` in ``pipe`` as an EVAL of its text, not an EVALSHA: redis-py checks
    a pipeline's scripts with a SCRIPT EXISTS round trip before every execute, and an
    EVALSHA the server does not know (a promoted replica has no script cache) would fail
    inside a transaction whose other commands still run. Redis caches the compiled script
    by its text's digest, so an EVAL costs only the text's bytes on the wire."""
    pipe.eval(script.script, len(keys), *keys, *args)


def store_errors(exc: redis.RedisError) -> Exception:
    """Translate a redis-py error into the pipeline error tree (the store's boundary)."""
    from pipeline.errors import StoreRefused, StoreUnavailable

    if isinstance(
        exc,
        redis.exceptions.AuthenticationError
        | redis.exceptions.AuthorizationError
        | redis.exceptions.NoPermissionError,
    ):
        return StoreRefused(
            f"Redis refused this user: {exc} (its password file, or the ACL file: "
            "coral2-pipeline redis-acl)",
            delay_s=5.0,
        )
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
        return StoreUnavailable(f"Redis unavailable: {exc}", delay_s=1.0)
    if isinstance(exc, redis.ReadOnlyError):
        return StoreUnavailable(f"Redis is read-only (failover in progress?): {exc}", delay_s=2.0)
    return StoreUnavailable(f"Redis error: {exc}", delay_s=1.0)


def _translating(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def translate(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except redis.RedisError as exc:
            raise store_errors(exc) from exc

    return translate


def translated(cls: type[T]) -> type[T]:
    """The store's boundary, in one place: every public method ``cls`` defines raises the
    pipeline's errors (:func:`store_errors`), never redis-py's. Private helpers are left
    as they are, so that a public method may still catch a redis-py error of theirs (a
    NOGROUP to recreate a group); a generator method too (its errors come as it is
    iterated, after the call returned)."""
    for name, attr in list(vars(cls).items()):
        if name.startswith("_") or not inspect.isfunction(attr):
            continue
        if inspect.isgeneratorfunction(attr):
            continue
        setattr(cls, name, _translating(attr))
    return cls


def refused_keys(names: Sequence[str], results: Sequence[Any]) -> list[str]:
    """The ``names`` whose pipelined command Redis refused (a reply that is an error, such
    as ``WRONGTYPE`` on a key a node retyped): each costs its own node alone. An error of
    the connection is raised as the store's, as every other command's is."""
    out = []
    for name, result in zip(names, results, strict=True):
        if not isinstance(result, Exception):
            continue
        if isinstance(result, redis.ResponseError) and str(result).startswith("WRONGTYPE"):
            out.append(name)
        elif isinstance(result, redis.RedisError):
            raise store_errors(result)
        else:
            raise result
    return out

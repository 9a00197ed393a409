"""RFC 44 resource events: what they hold, how drains replay, how a log stays small.

The Flux resource service records changes to resource availability as RFC 18
events. This module is pure: it checks events, replays drains against the
instance's current nodelist and compacts a log without changing what a replay
gives. The log itself lives in the store (:mod:`pipeline.store.resource_log`).

* :data:`PERSISTENT` events go to the resource eventlog and are replayed after
  a restart; :data:`JOURNAL_ONLY` events (online, offline, torpid, lively) are
  streamed by the journal but never written to the eventlog, as the RFC allows.
* :func:`drained` replays ``drain``/``undrain`` with the RFC's overwrite
  rules; a rank whose host moved follows its hostname (first rank of that host
  today), a host that is gone is dropped.
* :func:`compact` folds a log into the fewest events that replay to the same
  drained set, keeping the latest ``restart``, ``resource-define`` and
  ``resource-update``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import orjson

from pipeline.errors import EventlogError, HostlistError, IdsetError
from pipeline.model.hostlist import encode_hostlist, expand_hostlist
from pipeline.model.idset import decode_idset, encode_idset

#: Events posted to the resource eventlog (replayed after a restart).
PERSISTENT = frozenset({"restart", "resource-define", "resource-update", "drain", "undrain"})
#: Events only the journal streams. ``truncate`` (flux-core 0.88) heads a journal whose
#: oldest events were dropped (``[resource] journal-max``, 100,000 by default): it carries
#: the timestamp of the last event dropped, and no context.
JOURNAL_ONLY = frozenset({"online", "offline", "torpid", "lively", "truncate"})
EVENT_NAMES = PERSISTENT | JOURNAL_ONLY
#: ``resource-define``'s ``method`` values.
DEFINE_METHODS = ("configuration", "dynamic-discovery", "reload", "job-info", "kvs")
#: ``drain``'s ``overwrite``: 0 keeps a drained target as it is, 1 updates its reason,
#: 2 its reason and its timestamp.
OVERWRITE = (0, 1, 2)

_STR, _INT = "an RFC 22 idset or RFC 29 hostlist string", "an integer"
#: Each event's required context keys and what they hold.
REQUIRED: Mapping[str, Mapping[str, str]] = {
    "restart": {"ranks": "idset", "online": "idset", "nodelist": "hostlist"},
    "resource-define": {"method": "method"},
    "resource-update": {"expiration": "integer"},
    "drain": {"idset": "idset", "nodelist": "hostlist", "overwrite": "overwrite"},
    "undrain": {"idset": "idset", "nodelist": "hostlist"},
    "online": {"idset": "idset"},
    "offline": {"idset": "idset"},
    "torpid": {"idset": "idset"},
    "lively": {"idset": "idset"},
    "truncate": {},
}
#: Events whose context may be left out (flux-core writes none).
NO_CONTEXT = frozenset({"truncate"})


class ResourceEventError(EventlogError):
    """Raised when a resource event lacks a key the RFC requires or holds a bad value."""


def _fail(name: object, problem: str) -> ResourceEventError:
    return ResourceEventError(f"resource event {name!r}: {problem}")


def _check_value(name: str, key: str, kind: str, value: Any) -> None:
    if kind in ("idset", "hostlist", "method"):
        if not isinstance(value, str):
            raise _fail(name, f"context key {key!r} must be a string, got {value!r}")
        try:
            if kind == "idset":
                decode_idset(value)
            elif kind == "hostlist":
                expand_hostlist(value)
        except (IdsetError, HostlistError) as exc:
            raise _fail(name, f"context key {key!r}: {exc}") from None
        if kind == "method" and value not in DEFINE_METHODS:
            raise _fail(name, f"method {value!r} is not one of {', '.join(DEFINE_METHODS)}")
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(name, f"context key {key!r} must be an integer, got {value!r}")
    if kind == "overwrite" and value not in OVERWRITE:
        raise _fail(name, f"overwrite must be 0, 1 or 2, got {value}")


def check_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``event`` as a plain RFC 18 object after checking it against RFC 44.

    Raises :class:`ResourceEventError` naming the event and the key at fault.
    """
    if not isinstance(event, Mapping):
        raise ResourceEventError(f"a resource event must be a JSON object, got {event!r}")
    name = event.get("name")
    if name not in EVENT_NAMES:
        raise _fail(name, f"unknown event; RFC 44 defines {', '.join(sorted(EVENT_NAMES))}")
    stamp = event.get("timestamp")
    if isinstance(stamp, bool) or not isinstance(stamp, int | float) or not math.isfinite(stamp):
        raise _fail(name, f"timestamp must be a number of seconds, got {stamp!r}")
    context = event.get("context")
    if context is None and name in NO_CONTEXT:
        context = {}
    if not isinstance(context, Mapping):
        raise _fail(name, "a context object is required")
    for key, kind in REQUIRED[str(name)].items():
        if key not in context:
            raise _fail(name, f"context key {key!r} is required")
        _check_value(str(name), key, kind, context[key])
    reason = context.get("reason")
    if name == "drain" and reason is not None and not isinstance(reason, str):
        raise _fail(name, f"reason must be a string, got {reason!r}")
    if name == "truncate" and "nodelist" in context:  # the bridge's note of the instance
        _check_value(str(name), "nodelist", "hostlist", context["nodelist"])
    return {"timestamp": float(stamp), "name": name, "context": dict(context)}


def events_of(lines: Iterable[str | bytes]) -> Iterator[dict[str, Any]]:
    """Each line of an RFC 18 eventlog as an event object, one at a time (a log of a
    million events is never held whole); a line that is not a JSON object raises,
    naming its number. Blank lines are skipped."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ResourceEventError(f"eventlog line {number}: not JSON ({exc})") from None
        if not isinstance(event, dict):
            raise ResourceEventError(f"eventlog line {number}: not a JSON object")
        yield event


class _RankMap:
    """Today's rank of each target of an event, cached by (idset, nodelist)."""

    def __init__(self, nodelist: str | Sequence[str]) -> None:
        self.hosts = expand_hostlist(nodelist)
        self.first: dict[str, int] = {}
        for rank, host in enumerate(self.hosts):
            self.first.setdefault(host, rank)
        self.cache: dict[tuple[str, str], tuple[int, ...]] = {}

    def targets(self, name: str, idset: str, nodelist: str) -> tuple[int, ...]:
        key = (idset, nodelist)
        found = self.cache.get(key)
        if found is None:
            found = self._resolve(name, idset, nodelist)
            if len(self.cache) > 65_536:
                self.cache.clear()
            self.cache[key] = found
        return found

    def _resolve(self, name: str, idset: str, nodelist: str) -> tuple[int, ...]:
        pairs = event_pairs(name, idset, nodelist)
        ranks: dict[int, None] = {}
        hosts, first = self.hosts, self.first
        for rank, host in pairs:
            if rank < len(hosts) and hosts[rank] == host:
                ranks[rank] = None
            elif (moved := first.get(host)) is not None:
                ranks[moved] = None  # the host has another rank today
            # else: the host left the instance
        return tuple(ranks)


def event_pairs(name: str, idset: str, nodelist: str) -> list[tuple[int, str]]:
    """(rank, hostname) of each target of a drain or undrain, as the event names them.

    The nodelist names the idset's targets in order; a nodelist of the whole
    instance (one host per rank) is read too.
    """
    try:
        ids = decode_idset(idset)
        hosts = expand_hostlist(nodelist)
    except (IdsetError, HostlistError) as exc:
        raise _fail(name, str(exc)) from None
    if len(hosts) == len(ids):
        return list(zip(ids, hosts, strict=True))
    if ids and len(hosts) > ids[-1]:
        return [(rank, hosts[rank]) for rank in ids]
    raise _fail(
        name,
        f"nodelist {nodelist!r} names {len(hosts)} hosts for the {len(ids)} ranks of "
        f"idset {idset!r}",
    )


def _drain_fields(event: Mapping[str, Any]) -> tuple[str, str, str, float, Mapping[str, Any]]:
    name = event.get("name")
    context = event.get("context")
    if context is None and name in NO_CONTEXT:
        context = {}
    if not isinstance(context, Mapping):
        raise _fail(name, "a context object is required")
    try:
        idset, nodelist = context["idset"], context["nodelist"]
    except KeyError as exc:
        raise _fail(name, f"context key {exc.args[0]!r} is required") from None
    if not isinstance(idset, str) or not isinstance(nodelist, str):
        raise _fail(name, "idset and nodelist must be strings")
    stamp = event.get("timestamp")
    if isinstance(stamp, bool) or not isinstance(stamp, int | float):
        raise _fail(name, f"timestamp must be a number of seconds, got {stamp!r}")
    return str(name), idset, nodelist, float(stamp), context


def _apply(
    state: dict[Any, tuple[float, str]],
    targets: Iterable[Any],
    name: str,
    stamp: float,
    context: Mapping[str, Any],
) -> None:
    if name == "undrain":
        for target in targets:
            state.pop(target, None)
        return
    overwrite = context.get("overwrite")
    if overwrite not in OVERWRITE or isinstance(overwrite, bool):
        raise _fail(name, f"overwrite must be 0, 1 or 2, got {overwrite!r}")
    reason = context.get("reason") or ""
    if not isinstance(reason, str):
        raise _fail(name, f"reason must be a string, got {reason!r}")
    for target in targets:
        current = state.get(target)
        if current is None or overwrite == 2:
            state[target] = (stamp, reason)
        elif overwrite == 1:
            state[target] = (current[0], reason)


def drained(events: Iterable[Mapping[str, Any]], nodelist: str) -> dict[int, tuple[float, str]]:
    """Replay RFC 18 ``events`` against the instance's RFC 29 ``nodelist``.

    Rank *i* is the *i*-th host of ``nodelist``. Returns rank → (timestamp,
    reason) of every drained target (reason ``""`` when none was given).
    Events other than ``drain`` and ``undrain`` change nothing here.
    """
    ranks = _RankMap(nodelist)
    state: dict[int, tuple[float, str]] = {}
    for event in events:
        name = event.get("name")
        if name == "undrain":
            context = event.get("context")
            try:  # the common case in a few dict lookups; anything odd is named below
                targets = ranks.targets(name, context["idset"], context["nodelist"])  # type: ignore[index]
            except (TypeError, KeyError):
                name, idset, hosts, stamp, context = _drain_fields(event)
                targets = ranks.targets(name, idset, hosts)
            for rank in targets:
                state.pop(rank, None)
        elif name == "drain":
            name, idset, hosts, stamp, context = _drain_fields(event)
            _apply(state, ranks.targets(name, idset, hosts), name, stamp, context)
    return state


def _drained_by_name(
    events: Iterable[Mapping[str, Any]],
) -> dict[tuple[int, str], tuple[float, str]]:
    """Replay drains keyed by (rank, hostname) as the events name them."""
    state: dict[tuple[int, str], tuple[float, str]] = {}
    for event in events:
        if event.get("name") not in ("drain", "undrain"):
            continue
        name, idset, hosts, stamp, context = _drain_fields(event)
        _apply(state, event_pairs(name, idset, hosts), name, stamp, context)
    return state


def drain_event(
    stamp: float, pairs: Sequence[tuple[int, str]], reason: str, overwrite: int = 0
) -> dict[str, Any]:
    """A ``drain`` event of ``pairs`` (rank, hostname), ranks ascending and distinct."""
    context: dict[str, Any] = {
        "idset": encode_idset(rank for rank, _ in pairs),
        "nodelist": encode_hostlist(host for _, host in pairs),
        "overwrite": overwrite,
    }
    if reason:
        context["reason"] = reason
    return {"timestamp": stamp, "name": "drain", "context": context}


def compact(
    events: Iterable[Mapping[str, Any]], nodelist: str | None = None
) -> list[dict[str, Any]]:
    """The fewest events that replay as ``events`` do.

    Keeps the latest ``restart``, ``resource-define`` and ``resource-update``,
    drops journal-only events, and writes the drained targets as one ``drain``
    per (timestamp, reason). With ``nodelist`` (default: the latest
    ``restart``'s) drains are resolved against it first, so
    ``drained(compact(log, nl), nl) == drained(log, nl)`` for any log; a log
    without either keeps the ranks and hostnames its events name.
    """
    log = list(events)
    latest: dict[str, tuple[int, dict[str, Any]]] = {}
    for position, event in enumerate(log):
        name = event.get("name")
        if name in ("restart", "resource-define", "resource-update"):
            latest[str(name)] = (position, dict(event))
    if nodelist is None and "restart" in latest:
        nodelist = str(latest["restart"][1]["context"]["nodelist"])
    groups: dict[tuple[float, str], list[tuple[int, str]]] = {}
    if nodelist is not None:
        hosts = expand_hostlist(nodelist)
        for rank, entry in drained(log, nodelist).items():
            groups.setdefault(entry, []).append((rank, hosts[rank]))
    else:
        for pair, entry in _drained_by_name(log).items():
            groups.setdefault(entry, []).append(pair)
    kept = [event for _, event in sorted(latest.values(), key=lambda item: item[0])]
    drains: list[dict[str, Any]] = []
    for (stamp, reason), group in sorted(groups.items()):
        left = sorted(group)
        while left:  # one event per run of distinct ranks (a rank may carry two hosts)
            chunk: list[tuple[int, str]] = []
            rest: list[tuple[int, str]] = []
            for pair in left:
                (rest if chunk and chunk[-1][0] == pair[0] else chunk).append(pair)
            drains.append(drain_event(stamp, chunk, reason))
            left = rest
    folded = kept + drains
    persistent = [dict(e) for e in log if e.get("name") in PERSISTENT]
    once = all(sum(e.get("name") == n for e in persistent) <= 1 for n in latest)
    if once and len(persistent) < len(folded):
        # already as short as it gets: drains spread over more (timestamp, reason) pairs
        # than the log had drain events (an overwrite that kept some ranks' timestamps)
        return persistent
    return folded


def online_ranks(events: Iterable[Mapping[str, Any]]) -> tuple[set[int], str | None]:
    """The online ranks after ``events`` and the latest ``restart``'s nodelist.

    A ``restart`` resets the set to its ``online`` idset; ``online`` and
    ``offline`` add and remove ranks.
    """
    online: set[int] = set()
    nodelist: str | None = None
    for event in events:
        name = event.get("name")
        context = event.get("context") or {}
        if name == "restart":
            online = set(decode_idset(context["online"]))
            nodelist = context["nodelist"]
        elif name == "online":
            online.update(decode_idset(context["idset"]))
        elif name == "offline":
            online.difference_update(decode_idset(context["idset"]))
    return online, nodelist

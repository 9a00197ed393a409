"""Each node's own answers stream (``<prefix>:answers:<host>``), read by one reader.

A node worker appends its answers to its node's stream, the one key its Redis user may
write (``XADD``). Redis's ACLs cannot limit ``XADD``'s arguments, so whatever a node can
do with it — an ID at the end of the ID space, which refuses every later ``XADD``,
``MAXLEN 0`` or ``MINID``, which delete — it does to its own answers alone.

The sending side notes which nodes it awaits answers from (:meth:`NodeAnswers.await_`,
with each node task it sends) and rings a bell stream that wakes the reader. The reader,
one lifecycle worker at a time (a lease), reads the streams of the nodes awaited lately
in one ``XREAD``, waiting on them and on the bell; now and then it also looks for any
other node's stream that holds something (``SCAN``). It handles what it read, then
deletes exactly those entries: a reader killed in between reads them again, and counting
an answer twice counts it once (``pipeline.store.tally``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import redis

from pipeline.store.connection import refused_keys, store_errors, translated
from pipeline.store.keys import Keys

Entry = tuple[str, dict[bytes, bytes]]
#: How long a node stays awaited after a node task was sent to it (s).
AWAIT_S = 900.0
#: The bell keeps this many rings.
BELL_KEEP = 16


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@translated
class NodeAnswers:
    """The nodes' answers streams (see the module docstring)."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client, self.keys = client, keys
        self._streams_prefix = keys.node_answers("")

    def await_(self, hosts: Iterable[str], now: float) -> None:
        """Note that answers are awaited from ``hosts`` from ``now``, and ring the bell (the
        reader, blocked on the streams it knew of, reads again)."""
        members = dict.fromkeys(hosts, now)
        if not members:
            return
        pipe = self.client.pipeline(transaction=False)
        pipe.zadd(self.keys.answers_awaited, members)
        pipe.xadd(self.keys.answers_bell, {"at": repr(now)}, maxlen=BELL_KEEP)
        pipe.execute()

    def awaited(self, now: float, within_s: float = AWAIT_S, *, prune: bool = False) -> list[str]:
        """The nodes awaited within ``within_s`` of ``now``; with ``prune`` (the reader),
        older ones are forgotten."""
        return self.awaited_since(now, within_s, prune=prune)[0]

    def awaited_since(
        self, now: float, within_s: float = AWAIT_S, *, prune: bool = False
    ) -> tuple[list[str], str]:
        """:meth:`awaited`, and the bell's last ring as of then (what :meth:`read` waits
        for a later one of), in one round trip."""
        pipe = self.client.pipeline(transaction=False)
        if prune:
            pipe.zremrangebyscore(self.keys.answers_awaited, "-inf", now - within_s)
        pipe.zrangebyscore(self.keys.answers_awaited, now - within_s, "+inf")
        pipe.xrevrange(self.keys.answers_bell, count=1)
        hosts, last = pipe.execute()[-2:]
        return [_text(h) for h in hosts], _text(last[0][0]) if last else "0"

    def holding(self, scan_count: int = 1000) -> list[str]:
        """Every node whose stream holds an entry (a ``SCAN`` of the keyspace)."""
        keys = list(self.client.scan_iter(match=self.keys.node_answers_pattern, count=scan_count))
        if not keys:
            return []
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.xlen(key)
        lengths = pipe.execute(raise_on_error=False)
        return [
            _text(k).removeprefix(self._streams_prefix)
            for k, n in zip(keys, lengths, strict=True)
            if isinstance(n, int) and n > 0
        ]

    def read(
        self, hosts: Sequence[str], count: int, block_ms: int | None, bell: str = "$"
    ) -> tuple[dict[str, list[Entry]], list[str], bool]:
        """Up to ``count`` entries of each of ``hosts``' streams, from their start (an entry
        is deleted once handled) — at once when any holds one, else waiting up to
        ``block_ms`` for one, or for a ring of the bell after ``bell``; also the hosts
        whose key is not a stream (a node's ``SET``), and whether the bell rang. One
        ``XREAD``."""
        streams: dict[Any, Any] = {self.keys.node_answers(h): "0" for h in hosts}
        if block_ms:
            streams[self.keys.answers_bell] = bell
        try:
            rows: Any = (
                self.client.xread(streams, count=count, block=block_ms or None) if streams else None
            )
        except redis.ResponseError as exc:
            if "WRONGTYPE" not in str(exc):
                raise store_errors(exc) from exc
            found, unreadable = self._read_each(hosts, count)
            return found, unreadable, False
        except redis.RedisError as exc:
            raise store_errors(exc) from exc
        rang = any(_text(key) == self.keys.answers_bell for key, _ in rows or [])
        return self._rows(rows), [], rang

    def _read_each(
        self, hosts: Sequence[str], count: int
    ) -> tuple[dict[str, list[Entry]], list[str]]:
        """:meth:`read` a stream at a time: one key of ``hosts`` is not a stream."""
        out: dict[str, list[Entry]] = {}
        unreadable: list[str] = []
        for host in hosts:
            try:
                rows: Any = self.client.xread({self.keys.node_answers(host): "0"}, count=count)
            except redis.ResponseError:
                unreadable.append(host)
                continue
            except redis.RedisError as exc:
                raise store_errors(exc) from exc
            out.update(self._rows(rows))
        return out, unreadable

    def _rows(self, rows: Any) -> dict[str, list[Entry]]:
        out: dict[str, list[Entry]] = {}
        for key, entries in rows or []:
            name = _text(key)
            if not name.startswith(self._streams_prefix):
                continue  # the bell
            out[name.removeprefix(self._streams_prefix)] = [(_text(i), f) for i, f in entries]
        return out

    def done(self, handled: dict[str, list[str]]) -> list[str]:
        """Delete the entries handled, by stream, in one round trip; return the hosts whose
        key refused it (a node made it something else meanwhile), for the caller to
        discard. A connection error is the store's."""
        handled = {h: ids for h, ids in handled.items() if ids}
        if not handled:
            return []
        pipe = self.client.pipeline(transaction=False)
        for host, ids in handled.items():
            pipe.xdel(self.keys.node_answers(host), *ids)
        found = pipe.execute(raise_on_error=False)
        return refused_keys(list(handled), found)

    def lengths(self, hosts: Iterable[str]) -> dict[str, int]:
        """How many entries each of ``hosts``' streams holds."""
        hosts = list(hosts)
        pipe = self.client.pipeline(transaction=False)
        for host in hosts:
            pipe.xlen(self.keys.node_answers(host))
        found = pipe.execute(raise_on_error=False)
        return {h: n if isinstance(n, int) else 0 for h, n in zip(hosts, found, strict=True)}

    def set_aside_key(self, key: str) -> str:
        """Delete ``key``, a key a node may write that holds the wrong type (a queue that is
        not a list, a wake-up list that is not one); return the type it held."""
        pipe = self.client.pipeline(transaction=True)
        pipe.type(key)
        pipe.delete(key)
        kind, _ = pipe.execute()
        return _text(kind)

    def discard(self, host: str) -> None:
        """Delete ``host``'s whole stream (its worker's next answer makes it again)."""
        self.client.delete(self.keys.node_answers(host))

    def rate(self, counts: dict[str, int], now: float, window_s: int = 60) -> dict[str, int]:
        """Add ``counts`` (what → how many now) to this window's; return the totals."""
        if not counts:
            return {}
        key = self.keys.answers_rate(window_s, int(now // window_s))
        pipe = self.client.pipeline(transaction=False)
        for host, n in counts.items():
            pipe.hincrby(key, host, n)
        pipe.expire(key, 3 * window_s)
        totals = pipe.execute()[:-1]
        return {host: int(t) for host, t in zip(counts, totals, strict=True)}

    def flag(self, host: str, why: str, now: float) -> bool:
        """Note why ``host``'s answers were refused wholesale; whether it is new."""
        fresh = self.client.hset(self.keys.answers_flagged, host, f"{now:.0f} {why}")
        return bool(fresh)

    def flagged(self) -> dict[str, tuple[float, str]]:
        """host → (when, why) of every node whose answers were refused wholesale."""
        raw: Any = self.client.hgetall(self.keys.answers_flagged)
        out = {}
        for host, value in raw.items():
            when, _, why = _text(value).partition(" ")
            out[_text(host)] = (float(when or 0), why)
        return out

    def unflag(self, host: str) -> None:
        """Forget ``host``'s flag (the operator dealt with the node)."""
        self.client.hdel(self.keys.answers_flagged, host)

    def note_pass(self, holder: str, now: float) -> None:
        """The reader's latest pass (``status`` tells a reader that stopped)."""
        self.client.set(self.keys.answers_read, f"{now:.3f} {holder}")

    def last_pass(self) -> tuple[float, str] | None:
        """(when, holder) of the reader's latest pass, if any."""
        raw: Any = self.client.get(self.keys.answers_read)
        if not raw:
            return None
        when, _, holder = _text(raw).partition(" ")
        return float(when), holder

    def waiting(self, hosts: Iterable[str] | None = None) -> int:
        """How many answers are in the streams of ``hosts`` (every node's: a ``SCAN``)."""
        return self.backlog(self.holding() if hosts is None else hosts)[0]

    def backlog(self, hosts: Iterable[str]) -> tuple[int, float | None]:
        """How many answers wait in the streams of ``hosts``, and when the oldest of them
        was appended (epoch s)."""
        hosts = list(hosts)
        pipe = self.client.pipeline(transaction=False)
        for host in hosts:
            pipe.xlen(self.keys.node_answers(host))
            pipe.xrange(self.keys.node_answers(host), count=1)
        results = pipe.execute(raise_on_error=False)
        lengths, firsts = results[0::2], results[1::2]
        oldest = [
            int(_text(first[0][0]).partition("-")[0]) / 1000
            for first in firsts
            if isinstance(first, list) and first
        ]
        return sum(n for n in lengths if isinstance(n, int)), min(oldest, default=None)

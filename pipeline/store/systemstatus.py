"""What the SystemStatus sync keeps: where it is in the resource journal, the instance's
hosts and which are online, and the hosts our drains keep Disabled.

``<prefix>:systemstatus`` is a hash: ``cursor`` (a stream id of the resource
eventlog), ``seen`` (JSON), and ``disabled:<host>`` for each host a drain for
unmount failures made Disabled.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from pipeline.model.seen_hosts import Seen
from pipeline.store.connection import translated
from pipeline.store.keys import Keys

_DISABLED = "disabled:"


@translated
class SystemStatusSync:
    """The SystemStatus sync's position and memory."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client, self.key = client, keys.systemstatus

    def _do(self, command: str, *args: Any) -> Any:
        return getattr(self.client, command)(*args)

    def load(self) -> tuple[str, Seen]:
        """(cursor, what was seen) — ``"0"`` and nothing before the first sync."""
        raw: dict[bytes, bytes] = self._do("hgetall", self.key)
        cursor = raw.get(b"cursor", b"0").decode()
        disabled = [k.decode()[len(_DISABLED) :] for k in raw if k.decode().startswith(_DISABLED)]
        seen = json.loads(raw[b"seen"]) if b"seen" in raw else {}
        return cursor, Seen.from_json(seen, disabled)

    def save(self, cursor: str, seen: Seen, undrained: set[str]) -> None:
        """Keep ``cursor`` and ``seen``; forget the hosts ``undrained`` set free."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(self.key, mapping={"cursor": cursor, "seen": json.dumps(seen.to_json())})
        for host in undrained:
            pipe.hdel(self.key, _DISABLED + host)
        pipe.execute()

    def disable(self, hosts: list[str]) -> None:
        """Keep ``hosts`` Disabled until the journal shows their undrain."""
        if hosts:
            fields = dict.fromkeys((_DISABLED + h for h in hosts), "1")
            self.client.hset(self.key, mapping=fields)  # type: ignore[arg-type]

    def note_missing(self, missing: bool) -> None:
        """Note whether DWS's SystemStatus ``default`` was found missing (neither dws nor
        nnf-sos makes it: a site may run without it), for ``status`` to say so."""
        if missing:
            self._do("hset", self.key, "missing", "1")
        else:
            self._do("hdel", self.key, "missing")

    def missing(self) -> bool:
        """Whether the last sync found no SystemStatus ``default``."""
        return self._do("hget", self.key, "missing") is not None

    def disabled(self) -> set[str]:
        """Hosts our drains keep Disabled."""
        return self.load()[1].disabled

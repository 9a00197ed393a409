"""What the resource journal said of the instance's hosts so far (:class:`Seen`): kept in
the store between passes of :func:`pipeline.states.systemstatus.follow`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Seen:
    """What the journal said so far: the instance's hosts, which are online, and the hosts
    our drains keep Disabled."""

    hosts: list[str] = field(default_factory=list)
    online: set[str] = field(default_factory=set)
    disabled: set[str] = field(default_factory=set)

    def to_json(self) -> dict[str, Any]:
        return {"hosts": self.hosts, "online": sorted(self.online)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], disabled: Iterable[str]) -> Seen:
        return cls(list(data.get("hosts") or []), set(data.get("online") or []), set(disabled))

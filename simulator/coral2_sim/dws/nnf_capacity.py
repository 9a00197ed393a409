"""The rabbits' free space as nnf-sos shows it (``Storage.status.capacity``: what is not
allocated), refreshed as the simulated driver allocates and frees Servers."""

from __future__ import annotations

import math
import threading
import time
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pipeline.clients.k8s import DwsClient
from pipeline.errors import NotFound

#: One refresh of the rabbits' free space at a time: the last one to write has seen every
#: allocation made or freed before it.
_FREE_LOCK = threading.Lock()


@dataclass
class _Held:
    """What each Servers holds on each rabbit (bytes), kept as the driver changes them,
    so that a refresh reads the Servers it changed rather than every Workflow's; read
    afresh from every Servers at first and every :data:`REREAD_S`."""

    by_rabbit: dict[str, dict[str, int]] = field(default_factory=dict)  # rabbit → name → bytes
    read_at: float = -math.inf


#: How often the held space is read afresh from every Servers (s): what the driver did
#: not change itself (an object deleted through the API) counts after at most this long.
REREAD_S = 30.0
#: Each API server's (its DWS client's): a process may run several.
_HELD: weakref.WeakKeyDictionary[DwsClient, _Held] = weakref.WeakKeyDictionary()


def _held_by(server: dict[str, Any]) -> dict[str, int]:
    """Bytes a Servers holds on each rabbit: an allocation counts while its status shows
    a size on that rabbit."""
    allocated = {
        s.get("label"): s.get("storage") or {}
        for s in (server.get("status") or {}).get("allocationSets") or []
    }
    held: dict[str, int] = {}
    for aset in (server.get("spec") or {}).get("allocationSets") or []:
        size = int(aset.get("allocationSize") or 0)
        for entry in aset.get("storage") or []:
            rabbit = str(entry.get("name"))
            shown = allocated.get(aset.get("label"), {}).get(rabbit) or {}
            if int(shown.get("allocationSize") or 0) > 0:
                count = int(entry.get("allocationCount") or 1)
                held[rabbit] = held.get(rabbit, 0) + size * count
    return held


def _note_held(index: _Held, name: str, held: dict[str, int]) -> None:
    for holders in index.by_rabbit.values():
        holders.pop(name, None)
    for rabbit, amount in held.items():
        index.by_rabbit.setdefault(rabbit, {})[name] = amount


def refresh_free(dws: DwsClient, rabbits: Iterable[str], changed: Iterable[str] = ()) -> None:
    """Set each rabbit's ``status.capacity`` to its free space, as nnf-sos keeps it: its
    drives' total less what the Servers of every Workflow hold there. ``changed``: the
    Servers the caller changed (or deleted), read again first."""
    with _FREE_LOCK:
        index = _HELD.setdefault(dws, _Held())
        if time.monotonic() - index.read_at > REREAD_S:
            servers, _ = dws.list_objects("servers")
            index.by_rabbit.clear()
            for server in servers:
                _note_held(index, server["metadata"]["name"], _held_by(server))
            index.read_at = time.monotonic()
        else:
            for name in changed:
                try:
                    _note_held(index, name, _held_by(dws.get("servers", name)))
                except NotFound:
                    _note_held(index, name, {})
        for rabbit in sorted(set(rabbits)):
            try:
                storage = dws.get("storages", rabbit)
            except NotFound:
                continue
            devices = (storage.get("status") or {}).get("devices") or []
            total = sum(int(d.get("capacity") or 0) for d in devices)
            if not total:
                continue
            free = max(total - sum(index.by_rabbit.get(rabbit, {}).values()), 0)
            if int((storage.get("status") or {}).get("capacity") or 0) != free:
                dws.patch("storages", rabbit, {"status": {"capacity": free}}, status=True)

"""DWS's SystemStatus ``default`` as flux-coral2's SystemStatusManager keeps it.

Hosts come and go in the resource journal: a host that comes online is
Enabled, one that goes offline Disabled. Hosts the pipeline drained for
rabbit file systems that would not unmount stay Disabled until the journal
shows their ``undrain``; then they are Enabled again (when online).

:func:`follow` is pure: given the journal events since the last call and
what that call left (:class:`Seen`), it returns the hosts to patch and what
to keep for the next call, its argument untouched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.model.hostlist import expand_hostlist
from pipeline.model.idset import decode_idset
from pipeline.model.resource_events import event_pairs
from pipeline.model.seen_hosts import Seen

ENABLED, DISABLED = "Enabled", "Disabled"


def _hosts(seen: Seen, idset: str) -> set[str]:
    return {seen.hosts[r] for r in decode_idset(idset) if r < len(seen.hosts)}


def follow(
    events: Iterable[Mapping[str, Any]], before: Seen
) -> tuple[dict[str, str], set[str], Seen]:
    """Journal ``events`` after ``before`` (left as it is): (host → Enabled/Disabled to
    patch, hosts our drains no longer keep Disabled, what the journal says now)."""
    seen = Seen(list(before.hosts), set(before.online), set(before.disabled))
    patch: dict[str, str] = {}
    undrained: set[str] = set()
    for event in events:
        name = event.get("name")
        context = event.get("context") or {}
        if name == "restart":
            seen.hosts = expand_hostlist(str(context["nodelist"]))
            online = _hosts(seen, str(context["online"]))
            for host in seen.hosts:
                patch[host] = ENABLED if host in online else DISABLED
            seen.online = online
        elif name == "truncate" and context.get("nodelist"):
            # events were dropped before it, the restart that names the ranks among them
            seen.hosts = expand_hostlist(str(context["nodelist"]))
        elif name in ("online", "offline"):
            hosts = _hosts(seen, str(context["idset"]))
            if name == "online":
                patch.update(dict.fromkeys(hosts - seen.online, ENABLED))
                seen.online |= hosts
            else:
                patch.update(dict.fromkeys(hosts, DISABLED))
                seen.online -= hosts
        elif name == "undrain":
            pairs = event_pairs("undrain", str(context["idset"]), str(context["nodelist"]))
            back = {host for _, host in pairs} & seen.disabled
            undrained |= back
            seen.disabled -= back
            patch.update({h: ENABLED if h in seen.online else DISABLED for h in back})
    for host in seen.disabled:
        patch[host] = DISABLED  # our drains keep them Disabled whatever else happened
    return patch, undrained, seen

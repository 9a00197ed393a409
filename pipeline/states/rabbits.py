"""Rabbit health: what Flux is told when a rabbit's Storage changes.

flux-coral2's FluxionRabbitManager rules, on every Storage event:

1. with ``rabbit.drain_compute_nodes`` (default), computes whose access to the
   rabbit is not Ready are drained with ``"rabbit lost PCIe connection"``
   (only those matching ``pipeline.drain_queues``, when set);
2. only when the rabbit is Ready, ``drain_compute_nodes`` is off and
   ``soft_drain`` on, those computes get the ``badrabbit`` property; every
   other compute of the rabbit has it removed;
3. each ssd vertex of the rabbit's chassis (``<chassis path>/ssd<i>``) is set
   ``up`` when the rabbit is Ready, else ``down``.

coral2_dws sends all of it on every event. Here the decision is a diff against
what Flux was last told of the rabbit (:class:`Told`), so a replayed event
sends nothing new; a new Flux incarnation (a ``restart`` in the resource
eventlog) starts from nothing, as coral2_dws processes every Storage at start.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pipeline.model.hostlist import unique_hostlist
from pipeline.model.told import Change, Message, Told
from pipeline.states.actions import Action, TellFlux

#: The drain reason coral2_dws gives computes that lost their rabbit.
PCIE_REASON = "rabbit lost PCIe connection"
BADRABBIT = "badrabbit"
READY = "Ready"


@dataclass(frozen=True)
class RabbitPolicy:
    """The settings the rules read."""

    drain_compute_nodes: bool = True
    soft_drain: bool = True
    #: computes that may be drained (``pipeline.drain_queues``); None: all
    drainable: frozenset[str] | None = None


def health_view(storage: Mapping[str, Any]) -> tuple[Any, Any]:
    """What the health rules and the rabbit's health record can read of a Storage: all of
    it but its metadata and its free space (``status.capacity``, which nnf-sos changes as
    every allocation comes and goes). Two events with the same view ask for one observe."""
    status = storage.get("status")
    if isinstance(status, Mapping):
        status = {k: v for k, v in status.items() if k != "capacity"}
    return storage.get("spec"), status


def storage_status(storage: Mapping[str, Any]) -> str | None:
    """``status.status`` of a Storage (None when missing), as ``_get_status`` reads it."""
    status = storage.get("status") or {}
    value = status.get("status") if isinstance(status, Mapping) else None
    return value if isinstance(value, str) else None


def offline_computes(storage: Mapping[str, Any]) -> frozenset[str]:
    """Computes of ``status.access.computes`` whose status is not Ready."""
    status = storage.get("status") or {}
    access = status.get("access") or {} if isinstance(status, Mapping) else {}
    computes = access.get("computes") or [] if isinstance(access, Mapping) else []
    return frozenset(
        str(c["name"])
        for c in computes
        if isinstance(c, Mapping) and c.get("name") and c.get("status") != READY
    )


def listed_computes(storage: Mapping[str, Any]) -> list[str]:
    """Every compute of ``status.access.computes`` (the rabbit's PCIe topology)."""
    status = storage.get("status") or {}
    access = status.get("access") or {} if isinstance(status, Mapping) else {}
    computes = access.get("computes") or [] if isinstance(access, Mapping) else []
    return [str(c["name"]) for c in computes if isinstance(c, Mapping) and c.get("name")]


def mapping_drift(
    rabbit: str, storage: Mapping[str, Any], mapped: Mapping[str, str]
) -> dict[str, str]:
    """Where the rabbitmapping (``mapped``: compute → rabbit) disagrees with ``rabbit``'s
    Storage: each compute the Storage lists that the mapping puts behind another rabbit
    (or none), with the mapping's rabbit (``""`` for none); each compute the mapping puts
    behind ``rabbit`` that the Storage does not list, with ``"-"``. Empty: they agree, or
    the Storage lists no compute yet (its status not filled in: nothing to compare)."""
    listed = listed_computes(storage)
    if not listed:
        return {}
    drift = {c: mapped.get(c, "") for c in listed if mapped.get(c) != rabbit}
    seen = set(listed)
    drift.update({c: "-" for c, r in mapped.items() if r == rabbit and c not in seen})
    return drift


def decide(
    status: str | None,
    offline: Collection[str],
    computes: Collection[str],
    ssd_paths: Sequence[str],
    policy: RabbitPolicy,
    told: Told,
    epoch: str,
    version: str = "",
) -> Change:
    """What to tell Flux of a rabbit whose Storage shows ``status`` and ``offline``.

    ``computes`` are the rabbit's computes Flux knows (mapped, not excluded);
    ``ssd_paths`` its chassis's ssd vertices; ``version`` the Storage's
    ``resourceVersion``. Pure: the same inputs give the same messages.
    """
    told = told.in_epoch(epoch)
    known = frozenset(computes)
    down = frozenset(offline) & known
    messages: list[Message] = []
    drained: frozenset[str] = frozenset()
    if policy.drain_compute_nodes:
        drainable = down if policy.drainable is None else down & policy.drainable
        drained = drainable
        fresh = drainable - told.drained
        if fresh:
            payload = {"targets": unique_hostlist(sorted(fresh)), "reason": PCIE_REASON}
            messages.append(Message("drain", {**payload, "mode": "update"}))
    soft = status == READY and not policy.drain_compute_nodes and policy.soft_drain
    bad = down if soft else frozenset()
    held = told.held - bad if version == told.version else frozenset()
    if gone := (told.badrabbit | told.held) - bad - held:
        hosts = unique_hostlist(sorted(gone))
        messages.append(Message("remove-property", {"targets": hosts, "key": BADRABBIT}))
    if new := bad - told.badrabbit - told.held:
        hosts = unique_hostlist(sorted(new))
        messages.append(
            Message("set-property", {"targets": hosts, "key": BADRABBIT, "value": "bad"})
        )
    daemon_down = told.daemon_down and version == told.version
    ssd = "up" if status == READY and not told.holders and not daemon_down else "down"
    if told.ssd != ssd:
        messages += ssd_status(ssd_paths, ssd)
    after = replace(
        told,
        daemon_down=daemon_down,
        ssd=ssd,
        badrabbit=bad,
        drained=drained,
        held=held,
        version=version,
        status=status,
        paths=tuple(ssd_paths),
    )
    return Change(messages, after)


def on_storage(rabbit: str, told: Told, change: Change) -> list[Action]:
    """The actions of ``change``, decided (:func:`decide`) on ``rabbit``'s record ``told``:
    tell Flux what changed and keep the new record, written only onto ``told``; nothing
    when nothing changed (a replayed event)."""
    if not change.messages and change.told == told:
        return []
    return [TellFlux(rabbit, told, change)]


def ssd_status(paths: Sequence[str], status: str) -> list[Message]:
    """Set each ssd vertex of ``paths`` ``status`` (``up`` or ``down``)."""
    return [Message("set-status", {"resource_path": path, "status": status}) for path in paths]


def hold(told: Told, jobid: str, epoch: str) -> Change:
    """Job ``jobid`` holds the rabbit until its Teardown completes: its ssds go down."""
    told = told.in_epoch(epoch)
    after = replace(told, holders=told.holders | {jobid})
    if told.ssd != "up":  # down already, or not told yet: the first pass sees the hold
        return Change([], after)
    return Change(ssd_status(told.paths, "down"), replace(after, ssd="down"))


def free(told: Told, jobid: str, epoch: str) -> Change:
    """Job ``jobid``'s Teardown completed: its hold goes; the ssds come up if it was the
    last and the Storage was Ready."""
    told = told.in_epoch(epoch)
    after = replace(told, holders=told.holders - {jobid})
    if (
        after.holders
        or after.daemon_down
        or after.status != READY
        or told.ssd == "up"
        or not told.paths
    ):
        return Change([], after)
    return Change(ssd_status(told.paths, "up"), replace(after, ssd="up"))


def daemon_down(told: Told, epoch: str) -> Change:
    """The rabbit's own ClientMount never came up — its node daemon is down, so whatever
    it serves is not there: its ssds go down until its Storage next changes."""
    told = told.in_epoch(epoch)
    after = replace(told, daemon_down=True)
    if told.ssd != "up":  # down already, or not told yet: the first pass sees it
        return Change([], after)
    return Change(ssd_status(told.paths, "down"), replace(after, ssd="down"))

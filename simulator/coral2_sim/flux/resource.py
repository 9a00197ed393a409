"""The simulated Flux resource service: drains and undrains in an RFC 44 eventlog, and
the ssd vertices' status the scheduler honours.

Like flux-core's resource module it posts ``restart``, ``resource-define``
(with R) and ``online`` when it starts, replays the eventlog's drains (so a
drained node stays drained across a restart), and records every
``resource.drain`` / ``resource.undrain`` as an event. The eventlog is the
store's (:class:`~pipeline.store.resource_log.ResourceLog`), so
``coral2-pipeline resource status|journal`` read what this service wrote.

ssd status: as dws2jgf writes every ssd vertex down, each rabbit's ssds start
down and only ``sched-fluxion-resource.set_status`` brings them up; the
scheduler gives a rabbit's ssd only in proportion to its ssds that are up.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from typing import Any

from coral2_sim.flux.sched import Resources
from pipeline.errors import FluxError, StoreUnavailable
from pipeline.model.hostlist import encode_hostlist, expand_hostlist
from pipeline.model.idset import encode_idset
from pipeline.model.jgf import DEFAULT_CHUNKS_PER_NNF
from pipeline.store.resource_log import ResourceLog

log = logging.getLogger("coral2_coral2_sim.flux")

#: ``resource.drain``'s mode → the event's overwrite (flux-core: none, update, overwrite)
#: flux-core 0.88 (src/modules/resource/drain.c): "update" drains only what is not
#: drained yet (and undrains without failing on what is not drained), "overwrite" and
#: "force-overwrite" replace the reason (overwrite 1 and 2 in the event)
OVERWRITE = {None: 0, "update": 0, "overwrite": 1, "force-overwrite": 2}
#: flux_request_unpack's answer to a key of the wrong type (a null mode)
EPROTO = "Protocol error"
_SSD = re.compile(r"^/[^/]+/chassis(\d+)/ssd(\d+)$")


class ResourceService:
    """Drains in the eventlog, ssd status in the scheduler's resources."""

    def __init__(
        self, resources: Resources, eventlog: ResourceLog | None, chunks: int | None = None
    ) -> None:
        self.resources = resources
        self.eventlog = eventlog
        self.hosts = list(resources.ranks)
        self.nodelist = encode_hostlist(self.hosts)
        self.chunks = chunks
        if chunks is not None:  # every ssd vertex down, as dws2jgf writes them
            for rabbit in resources.mapping.rabbits:
                resources.ssd_up[rabbit] = set()
            resources.chunks = chunks

    def start(self) -> None:
        """Post restart, resource-define and online; take the drains the eventlog holds."""
        if self.eventlog is None:
            return
        nodelist = self.nodelist
        for rank, (_, reason) in self.eventlog.drained(nodelist).items():
            self.resources.drained[self.hosts[rank]] = reason
        now = time.time()
        ranks = encode_idset(range(len(self.hosts)))
        r = self.resources.r_of(self.hosts, 0.0, 0.0)
        r["execution"]["starttime"] = r["execution"]["expiration"] = 0.0
        self.eventlog.post(
            {
                "timestamp": now,
                "name": "restart",
                "context": {"ranks": ranks, "online": "", "nodelist": nodelist},
            },
            {"timestamp": now, "name": "resource-define", "context": {"method": "configuration"}},
            {"timestamp": now, "name": "online", "context": {"idset": ranks}},
            r=r,
        )

    def _targets(self, payload: dict[str, Any]) -> list[str]:
        try:
            hosts = expand_hostlist(str(payload["targets"]))
        except (KeyError, ValueError) as exc:
            raise FluxError(f"invalid targets: {exc}") from None
        unknown = [h for h in hosts if h not in self.resources.ranks]
        if unknown:
            raise FluxError(f"{encode_hostlist(unknown)}: unknown target")
        return hosts

    @staticmethod
    def _mode(payload: dict[str, Any]) -> str | None:
        """The request's mode; a mode that is not a string is refused as flux-core's
        request unpacking refuses it."""
        mode = payload.get("mode")
        if "mode" in payload and not isinstance(mode, str):
            raise FluxError(EPROTO)
        return mode

    def _ranks(self, hosts: Sequence[str]) -> str:
        """``rank 3`` or ``ranks 3-4,7``, as flux-core names them in its errors."""
        ranks = sorted(self.resources.ranks[h] for h in hosts)
        return f"rank{'s' if len(ranks) > 1 else ''} {encode_idset(ranks)}"

    def _event(self, name: str, hosts: Sequence[str], **extra: Any) -> None:
        if self.eventlog is None:
            return
        pairs = sorted((self.resources.ranks[h], h) for h in set(hosts))
        context = {
            "idset": encode_idset(r for r, _ in pairs),
            "nodelist": encode_hostlist(h for _, h in pairs),
            **extra,
        }
        while True:  # a resource service outlives a Redis restart
            try:
                self.eventlog.post({"timestamp": time.time(), "name": name, "context": context})
                return
            except StoreUnavailable as exc:
                log.warning("resource eventlog: %s; trying again", exc)
                time.sleep(0.2)

    def drain(self, payload: dict[str, Any]) -> None:
        """``resource.drain``: drain the targets (an error if any is drained, unless a mode)."""
        mode = self._mode(payload)
        hosts = self._targets(payload)
        if mode not in OVERWRITE:
            raise FluxError("Invalid mode specified")
        drained = self.resources.drained
        if mode is None and (already := [h for h in hosts if h in drained]):
            raise FluxError(f"{self._ranks(already)} already drained")
        reason = str(payload.get("reason") or "")
        for host in hosts:
            if host not in drained or OVERWRITE[mode] > 0:
                drained[host] = reason
        extra: dict[str, Any] = {"overwrite": OVERWRITE[mode]}
        if reason:
            extra["reason"] = reason
        self._event("drain", hosts, **extra)

    def undrain(self, payload: dict[str, Any]) -> None:
        """``resource.undrain``: undrain the targets; without a mode, each must be drained
        (flux-core's own errors)."""
        mode = self._mode(payload)
        hosts = self._targets(payload)
        if mode is not None and mode not in OVERWRITE:
            raise FluxError(f"invalid undrain mode '{mode}' specified")
        if mode is None and (free := [h for h in hosts if h not in self.resources.drained]):
            raise FluxError(f"{self._ranks(free)} not drained")
        for host in hosts:
            self.resources.drained.pop(host, None)
        self._event("undrain", hosts)

    def set_status(self, path: str, status: str) -> None:
        """``sched-fluxion-resource.set_status`` of a rabbit's ssd vertex."""
        if status not in ("up", "down"):
            raise FluxError(f"unrecognized status '{status}'")
        unknown = FluxError(f"could not find path '{path}' in resource graph")
        match = _SSD.match(path)
        if match is None:
            try:
                self.resources.host_of_path(path)  # a compute's vertex, or none
            except FluxError:
                raise unknown from None
            return
        k, i = int(match.group(1)), int(match.group(2))
        rabbits = list(self.resources.mapping.rabbits)
        if k >= len(rabbits) or i >= (self.chunks or DEFAULT_CHUNKS_PER_NNF):
            raise unknown
        if self.chunks is None:
            return
        up = self.resources.ssd_up[rabbits[k]]
        if status == "up":
            up.add(i)
        else:
            up.discard(i)

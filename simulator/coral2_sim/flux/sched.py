"""The simulated Flux instance's resources: nodes, rabbit ssd capacity, constraints and R.

A deliberately simple scheduler (first fit, in submission order, with
backfill) over the computes of a rabbitmapping. It understands the three
request shapes Flux jobs take in a rabbit system:

* ``[{"type": "node", "count": N, ...}]`` — N nodes anywhere;
* ``[{"type": "slot", "count": C, "label": "rabbit", "with": [node n, ssd s]}]``
  (what ``resource-update`` writes) and ``[{"type": "chassis", "count": C,
  "with": [node n, ssd s?]}]`` — C groups of n nodes under one rabbit each,
  with s GiB free on that rabbit (groups may share a rabbit);

and RFC 31 constraints (``properties``, ``hostlist``, ``ranks``, ``not``,
``and``, ``or``), which is how the ``exclude`` constraint keeps jobs off
``badrabbit`` nodes. Drained nodes are never allocated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.errors import FluxError
from pipeline.model.hostlist import encode_hostlist, expand_hostlist
from pipeline.model.idset import decode_idset, encode_idset
from pipeline.model.rabbitmap import RabbitMapping

GiB = 2**30


class Unsatisfiable(ValueError):
    """The request can never be met by this instance (the job gets an exception)."""


@dataclass(frozen=True)
class Request:
    """What a jobspec asks for: ``groups`` groups of ``nodes`` nodes, ``ssd`` GiB each.

    Each group's nodes and ssd come from one rabbit; several groups may share one.
    """

    nodes: int
    groups: int | None = None  # None: nodes anywhere, no rabbit grouping
    ssd_gib: int = 0

    @property
    def total_nodes(self) -> int:
        return self.nodes * (self.groups or 1)


def _count(vertex: Mapping[str, Any]) -> int:
    count = vertex.get("count", 1)
    if isinstance(count, Mapping):
        count = count.get("min", 1)
    if not isinstance(count, int) or count < 1:
        raise Unsatisfiable(f"resource count must be a positive integer, got {count!r}")
    return count


def request_of(resources: Sequence[Mapping[str, Any]]) -> Request:
    """Read the request of jobspec ``resources``."""
    if len(resources) != 1:
        raise Unsatisfiable(f"expected one top-level resource, got {len(resources)}")
    top = resources[0]
    kind = top.get("type")
    if kind == "node":
        return Request(nodes=_count(top))
    if kind in ("slot", "chassis"):
        children = {c.get("type"): c for c in top.get("with") or []}
        if "node" not in children:
            if kind == "slot":  # a plain task slot: one node per slot
                return Request(nodes=_count(top))
            raise Unsatisfiable("a chassis request needs a node below it")
        ssd = children.get("ssd")
        return Request(
            nodes=_count(children["node"]),
            groups=_count(top),
            ssd_gib=_count(ssd) if ssd else 0,
        )
    raise Unsatisfiable(f"unsupported top-level resource type {kind!r}")


def matches(constraint: Mapping[str, Any] | None, host: str, rank: int, props: set[str]) -> bool:
    """Whether ``host`` satisfies an RFC 31 constraint."""
    if not constraint:
        return True
    for op, value in constraint.items():
        if op == "properties":
            for prop in value:
                wanted = not prop.startswith("^")
                if (prop.lstrip("^") in props) != wanted:
                    return False
        elif op == "hostlist":
            if host not in {h for v in value for h in expand_hostlist(v)}:
                return False
        elif op == "ranks":
            if rank not in {r for v in value for r in decode_idset(v)}:
                return False
        elif op == "not":
            if all(matches(c, host, rank, props) for c in value):
                return False
        elif op == "and":
            if not all(matches(c, host, rank, props) for c in value):
                return False
        elif op == "or":
            if not any(matches(c, host, rank, props) for c in value):
                return False
        else:
            raise Unsatisfiable(f"unknown constraint operator {op!r}")
    return True


@dataclass
class Resources:
    """The instance's nodes and what is allocated, drained and tagged."""

    mapping: RabbitMapping
    cores: str = "0-95"
    ranks: dict[str, int] = field(default_factory=dict)
    free: set[str] = field(default_factory=set)
    drained: dict[str, str] = field(default_factory=dict)
    properties: dict[str, set[str]] = field(default_factory=dict)
    ssd_free: dict[str, int] = field(default_factory=dict)
    #: rabbit → indexes of its ssd vertices that are up (a rabbit absent: all up)
    ssd_up: dict[str, set[int]] = field(default_factory=dict)
    chunks: int = 1

    def __post_init__(self) -> None:
        hosts = [*self.mapping.computes, *self.mapping.rabbits]
        self.ranks = {h: i for i, h in enumerate(hosts)}
        self.free = set(self.mapping.computes)
        self.properties = {h: set() for h in hosts}
        for rabbit in self.mapping.rabbits:
            self.properties[rabbit].add("rabbit")
        self.ssd_free = {r: e.capacity // GiB for r, e in self.mapping.rabbits.items()}

    def _usable(self, constraint: Mapping[str, Any] | None) -> list[str]:
        return [
            h
            for h in self.mapping.computes
            if h in self.free
            and h not in self.drained
            and matches(constraint, h, self.ranks[h], self.properties[h])
        ]

    def check(self, request: Request) -> None:
        """Refuse a request no empty instance could ever satisfy."""
        if request.total_nodes > len(self.mapping.computes):
            raise Unsatisfiable(
                f"job asks for {request.total_nodes} nodes; the instance has "
                f"{len(self.mapping.computes)}"
            )
        if request.groups is not None:
            biggest = max(len(self.mapping.computes_of(r)) for r in self.mapping.rabbits)
            capacity = max(e.capacity // GiB for e in self.mapping.rabbits.values())
            if request.nodes > biggest or request.ssd_gib > capacity:
                raise Unsatisfiable(
                    f"no rabbit has {request.nodes} nodes and {request.ssd_gib} GiB of ssd"
                )

    def allocate(
        self, request: Request, constraint: Mapping[str, Any] | None
    ) -> tuple[list[str], dict[str, int]] | None:
        """Return (hosts, ssd GiB per rabbit) and mark them used, or None when busy."""
        usable = self._usable(constraint)
        if request.groups is None:
            if len(usable) < request.nodes:
                return None
            hosts = usable[: request.nodes]
            self.free.difference_update(hosts)
            return hosts, {}
        left = {r: self._ssd_usable(r) for r in self.ssd_free}
        avail: dict[str, list[str]] = {r: [] for r in left}
        for host in usable:  # one pass: a whole machine's hosts, each to its rabbit
            hosts_of = avail.get(self.mapping.computes.get(host, ""))
            if hosts_of is not None:
                hosts_of.append(host)
        chosen: list[str] = []
        ssd: dict[str, int] = {}
        for _ in range(request.groups):  # groups may share a rabbit, as Fluxion slots do
            for rabbit, hosts in avail.items():
                if left[rabbit] >= request.ssd_gib and len(hosts) >= request.nodes:
                    chosen += hosts[: request.nodes]
                    avail[rabbit] = hosts[request.nodes :]
                    left[rabbit] -= request.ssd_gib
                    ssd[rabbit] = ssd.get(rabbit, 0) + request.ssd_gib
                    break
            else:
                return None
        chosen.sort(key=self.ranks.__getitem__)
        self.free.difference_update(chosen)
        for rabbit, gib in ssd.items():
            self.ssd_free[rabbit] -= gib
        return chosen, ssd

    def _ssd_usable(self, rabbit: str) -> int:
        """GiB of ``rabbit``'s ssd free for a new job: none on its ssd vertices that are down."""
        up = self.ssd_up.get(rabbit)
        if up is None:
            return self.ssd_free[rabbit]
        capacity = self.mapping.rabbits[rabbit].capacity // GiB
        down_gib = (self.chunks - len(up)) * capacity // self.chunks
        return max(0, self.ssd_free[rabbit] - down_gib)

    def release(self, hosts: Sequence[str], ssd: Mapping[str, int]) -> None:
        """Give back what :meth:`allocate` took."""
        self.free.update(hosts)
        for rabbit, gib in ssd.items():
            self.ssd_free[rabbit] += gib

    def r_of(self, hosts: Sequence[str], now: float, duration_s: float) -> dict[str, Any]:
        """R (RFC 20) for an allocation of whole ``hosts``."""
        return {
            "version": 1,
            "execution": {
                "R_lite": [
                    {
                        "rank": encode_idset(self.ranks[h] for h in hosts),
                        "children": {"core": self.cores},
                    }
                ],
                "nodelist": [encode_hostlist(hosts)],
                "starttime": now,
                "expiration": now + duration_s,
            },
        }

    def host_of_path(self, path: str) -> str:
        """The compute at the end of a Fluxion containment path; FluxError, with Fluxion's
        words, for a path of no compute."""
        host = path.rstrip("/").rsplit("/", 1)[-1]
        if host not in self.properties or path.count("/") not in (2, 3):
            raise FluxError(f"Couldn't find '{path}' in resource graph")
        return host

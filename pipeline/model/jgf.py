"""``dws2jgf``: R (RFC 20) + rabbitmapping → a Fluxion JGF with chassis and ssd vertices.

The graph is exactly flux-coral2's: vertex order, ids,
metadata keys and their order, ssd sizing ``(capacity // N) // 2**30``,
ssd status 1 (down until the rabbit reports), exclusion by idset or
hostlist, and the input R re-emitted unchanged with ``scheduling`` added.

Upstream builds a million Python objects and serialises them at the end
(≈30 s and 1.3 GiB for El Capitan). Here the JSON text is produced as a
stream of chunks, one rabbit chassis at a time, with the edges kept as one
integer per vertex (every vertex but the root has exactly one parent and
its edge targets itself, so edges are ``parent[i] → i`` in vertex order).
The text uses :func:`json.dump`'s default separators, so it is the same
document upstream prints, byte for byte.
"""

from __future__ import annotations

import json
import socket
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.errors import HostlistError, IdsetError, ResourceSetError
from pipeline.model.hostlist import expand_hostlist
from pipeline.model.idset import decode_idset
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.model.resource_set import ResourceSet

_PLACEHOLDER = "\x00coral2-pipeline-scheduling\x00"
DEFAULT_CHUNKS_PER_NNF = 36


def default_cluster_name(hostname: str | None = None) -> str:
    """Return the local hostname without digits and trailing ``-``: ``compute-01`` → ``compute``."""
    name = socket.gethostname() if hostname is None else hostname
    return "".join(c for c in name if not c.isdigit()).rstrip("-")


def containment_path(mapping: RabbitMapping, cluster: str, host: str) -> str:
    """The Fluxion containment path dws2jgf gives ``host`` (computes and rabbits sit in
    ``/<cluster>/chassis<k>/``, k the rabbit's position in the mapping; others under the cluster).
    """
    rabbit = host if host in mapping.rabbits else mapping.computes.get(host)
    if rabbit is None:
        return f"/{cluster}/{host}"
    return f"/{cluster}/chassis{list(mapping.rabbits).index(rabbit)}/{host}"


def excluded_hosts(exclude: str, hosts: list[str]) -> set[str]:
    """Interpret ``resource.exclude``: an idset of ranks if it parses as one, else a hostlist."""
    try:
        ranks = decode_idset(exclude)
    except IdsetError:
        try:
            return set(expand_hostlist(exclude))
        except HostlistError as exc:
            raise ResourceSetError(
                f"resource.exclude {exclude!r} is neither an idset of ranks nor a hostlist"
            ) from exc
    return {hosts[r] for r in ranks if r < len(hosts)}


def _enc(text: str) -> str:
    """JSON-escape ``text`` without the surrounding quotes."""
    return json.dumps(text)[1:-1]


@dataclass
class _Graph:
    """The running state of one encoding: next vertex id and every vertex's parent."""

    parents: array[int] = field(default_factory=lambda: array("q"))

    @property
    def next_id(self) -> int:
        return len(self.parents)

    def add(self, parent: int, count: int = 1) -> int:
        first = len(self.parents)
        self.parents.extend([parent] * count)
        return first


class Dws2Jgf:
    """One dws2jgf run over validated inputs; iterate :meth:`chunks` for the text."""

    def __init__(
        self,
        raw_r: Mapping[str, Any],
        mapping: RabbitMapping,
        *,
        chunks_per_nnf: int = DEFAULT_CHUNKS_PER_NNF,
        cluster_name: str | None = None,
        exclude: str = "",
        validate: bool = True,
    ) -> None:
        if chunks_per_nnf < 1:
            raise ResourceSetError(f"--chunks-per-nnf must be at least 1, got {chunks_per_nnf}")
        self.raw_r = raw_r
        self.rset = ResourceSet.parse(raw_r)
        self.mapping = mapping
        self.chunks = chunks_per_nnf
        self.cluster = default_cluster_name() if cluster_name is None else cluster_name
        self.hosts = self.rset.hosts
        self.index: dict[str, int] = {}
        for i, host in enumerate(self.hosts):
            self.index.setdefault(host, i)
        if validate:
            missing = set(mapping.computes) - set(self.index)
            if missing:
                raise ResourceSetError(
                    f"Node(s) {missing} found in rabbit_mapping but not R from stdin"
                )
        self.excluded = excluded_hosts(exclude, self.hosts) if exclude else set()
        self.children: dict[int, list[tuple[str, tuple[int, ...]]]] = {}
        for entry in self.rset.execution.R_lite:
            kids = [(kind, decode_idset(ids)) for kind, ids in entry.children.items()]
            for rank in entry.ranks:
                self.children[rank] = kids
        self.properties = self.rset.properties_by_rank()
        for rank, host in enumerate(self.hosts):
            if host not in self.excluded and self.index[host] == rank:
                self._kids(rank, host)  # fail before the first byte is written
        self.graph = _Graph()

    # --- vertices ------------------------------------------------------------
    def _props(self, rank: int) -> str:
        names = self.properties.get(rank)
        if not names:
            return ""
        inner = ", ".join(f'"{_enc(n)}": ""' for n in names)
        return f'"properties": {{{inner}}}, '

    def _kids(self, rank: int, host: str) -> list[tuple[str, tuple[int, ...]]]:
        try:
            return self.children[rank]
        except KeyError:
            raise ResourceSetError(
                f"host {host!r} is at position {rank} of the nodelist but rank {rank} "
                "has no R_lite entry"
            ) from None

    def _host(
        self, out: list[str], parent: int, ppath: str, rank: int, host: str, kind: str
    ) -> None:
        path = f"{ppath}/{_enc(host)}"
        vid = self.graph.add(parent)
        extra = ' "exclusive": true,' if kind == "storage_node" else ""
        out.append(
            f'{{"id": "{vid}", "metadata": {{"type": "{kind}", "name": "{_enc(host)}", '
            f'"rank": {rank},{extra} {self._props(rank)}"paths": {{"containment": "{path}"}}}}}}'
        )
        for child_type, ids in self._kids(rank, host):
            first = self.graph.add(vid, len(ids))
            ctype = _enc(child_type)
            out.extend(
                f'{{"id": "{first + j}", "metadata": {{"type": "{ctype}", "id": {i}, '
                f'"rank": {rank}, "paths": {{"containment": "{path}/{ctype}{i}"}}}}}}'
                for j, i in enumerate(ids)
            )

    def _chassis(self, k: int, root: int, cpath: str, rabbit: str) -> list[str]:
        out: list[str] = []
        path = f"{cpath}/chassis{k}"
        vid = self.graph.add(root)
        out.append(
            f'{{"id": "{vid}", "metadata": {{"type": "chassis", "id": {k}, "properties": '
            f'{{"rabbit": "{_enc(rabbit)}", "ssdcount": "{self.chunks}"}}, '
            f'"paths": {{"containment": "{path}"}}}}}}'
        )
        size = (self.mapping.rabbits[rabbit].capacity // self.chunks) // 2**30
        first = self.graph.add(vid, self.chunks)
        out.extend(
            f'{{"id": "{first + i}", "metadata": {{"type": "ssd", "unit": "GiB", "size": {size}, '
            f'"paths": {{"containment": "{path}/ssd{i}"}}, "status": 1}}}}'
            for i in range(self.chunks)
        )
        for host in self.mapping.computes_of(rabbit):
            rank = self.index.get(host)
            if rank is not None and host not in self.excluded:
                self._host(out, vid, path, rank, host, "node")
        rank = self.index.get(rabbit)
        if rank is not None:
            self._host(out, vid, path, rank, rabbit, "storage_node")
        return out

    def _scheduling(self) -> Iterator[str]:
        cpath = "/" + _enc(self.cluster)
        root = self.graph.add(-1)
        yield (
            '{"graph": {"directed": false, "nodes": ['
            f'{{"id": "{root}", "metadata": {{"type": "cluster", "name": "{_enc(self.cluster)}", '
            f'"paths": {{"containment": "{cpath}"}}}}}}'
        )
        for k, rabbit in enumerate(self.mapping.rabbits):
            yield ", " + ", ".join(self._chassis(k, root, cpath, rabbit))
        mapped = set(self.mapping.computes) | set(self.mapping.rabbits)
        out: list[str] = []
        for rank, host in enumerate(self.hosts):
            if host in mapped or host in self.excluded:
                continue
            self._host(out, root, cpath, rank, host, "node")
            if len(out) > 50_000:
                yield ", " + ", ".join(out)
                out = []
        if out:
            yield ", " + ", ".join(out)
        yield '], "edges": ['
        parents = self.graph.parents
        step = 100_000
        for start in range(1, len(parents), step):
            stop = min(start + step, len(parents))
            text = ", ".join(
                f'{{"source": "{parents[i]}", "target": "{i}"}}' for i in range(start, stop)
            )
            yield text if start == 1 else ", " + text
        yield "]}}"

    def chunks_of_text(self, *, only_sched: bool = False) -> Iterator[str]:
        """Yield the output document in pieces (write them in order)."""
        if only_sched:
            yield from self._scheduling()
            return
        doc = dict(self.raw_r)
        doc["scheduling"] = _PLACEHOLDER
        head, tail = json.dumps(doc).split(json.dumps(_PLACEHOLDER))
        yield head
        yield from self._scheduling()
        yield tail

    @property
    def vertex_count(self) -> int:
        """How many vertices were emitted so far (all of them once iteration ends)."""
        return self.graph.next_id


def dws2jgf(
    raw_r: Mapping[str, Any],
    mapping: RabbitMapping,
    *,
    chunks_per_nnf: int = DEFAULT_CHUNKS_PER_NNF,
    cluster_name: str | None = None,
    exclude: str = "",
    validate: bool = True,
    only_sched: bool = False,
) -> dict[str, Any]:
    """Return the dws2jgf document as a Python object (small systems, tests)."""
    encoder = Dws2Jgf(
        raw_r,
        mapping,
        chunks_per_nnf=chunks_per_nnf,
        cluster_name=cluster_name,
        exclude=exclude,
        validate=validate,
    )
    result: dict[str, Any] = json.loads("".join(encoder.chunks_of_text(only_sched=only_sched)))
    return result

"""RFC 20 resource sets (R), version 1.

The model validates what the RFC requires (version 1, idsets and hostlists
that parse, a nodelist long enough for every rank, legal property names,
``expiration > starttime`` when both are set) and offers the lookups the
pipeline needs: rank → hostname, hostname → cores/GPUs, the unique host list
and a host's properties. :func:`resource_set_from_config` builds R from a
Flux ``[resource]`` config table, as ``flux R parse-config`` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pipeline.errors import HostlistError, IdsetError, ResourceSetError
from pipeline.model.hostlist import encode_hostlist, expand_hostlist, unique_in_order
from pipeline.model.idset import decode_idset, encode_idset
from pipeline.model.pydantic_errors import describe_validation_error

ILLEGAL_PROPERTY_CHARS = "!&'\"^`|()"


def check_property_name(name: str) -> str:
    """Return ``name`` if it is a legal RFC 20 property name, else raise."""
    bad = sorted({c for c in name if c in ILLEGAL_PROPERTY_CHARS})
    if not name or bad:
        raise ResourceSetError(
            f"invalid property name {name!r}: property names must be non-empty and must "
            f"not contain any of {ILLEGAL_PROPERTY_CHARS}"
        )
    return name


class RLiteEntry(BaseModel):
    """One ``execution.R_lite`` entry: ranks and the cores/GPUs each controls."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rank: str
    children: dict[str, str]

    @field_validator("rank")
    @classmethod
    def _rank_is_idset(cls, value: str) -> str:
        if not decode_idset(value):
            raise ValueError(f"rank idset {value!r} is empty")
        return value

    @field_validator("children")
    @classmethod
    def _children_are_idsets(cls, value: dict[str, str]) -> dict[str, str]:
        if "core" not in value:
            raise ValueError("children must have a 'core' idset")
        for key, ids in value.items():
            decode_idset(ids)
            if not key:
                raise ValueError("children keys must be resource type names")
        return value

    @cached_property
    def ranks(self) -> tuple[int, ...]:
        """The execution targets of this entry."""
        return decode_idset(self.rank)


class Execution(BaseModel):
    """The ``execution`` dictionary of R."""

    model_config = ConfigDict(extra="allow")

    R_lite: list[RLiteEntry]
    nodelist: list[str]
    properties: dict[str, str] = Field(default_factory=dict)
    starttime: float = 0.0
    expiration: float = 0.0

    @field_validator("nodelist")
    @classmethod
    def _nodelist_parses(cls, value: list[str]) -> list[str]:
        expand_hostlist(value)
        return value

    @field_validator("properties")
    @classmethod
    def _properties_valid(cls, value: dict[str, str]) -> dict[str, str]:
        for name, ids in value.items():
            check_property_name(name)
            decode_idset(ids)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Execution:
        hosts = expand_hostlist(self.nodelist)
        seen: set[int] = set()
        for entry in self.R_lite:
            for rank in entry.ranks:
                if rank in seen:
                    raise ValueError(f"R_lite: rank {rank} appears in more than one entry")
                seen.add(rank)
        ranks = sorted(seen)
        if len(hosts) < len(ranks):
            raise ValueError(
                f"nodelist has {len(hosts)} hosts but R_lite names {len(ranks)} ranks; "
                "every execution target needs a hostname"
            )
        for name, ids in self.properties.items():
            missing = sorted(set(decode_idset(ids)) - seen)
            if missing:
                raise ValueError(
                    f"property {name!r} names ranks {encode_idset(missing)} not in R_lite"
                )
        if self.starttime and self.expiration and not self.expiration > self.starttime:
            raise ValueError(
                f"expiration ({self.expiration}) must be greater than starttime ({self.starttime})"
            )
        return self


class ResourceSet(BaseModel):
    """An RFC 20 version 1 resource set."""

    model_config = ConfigDict(extra="forbid")

    version: int
    execution: Execution
    scheduling: dict[str, Any] | None = None
    attributes: dict[str, Any] | None = None

    @field_validator("version")
    @classmethod
    def _version_one(cls, value: int) -> int:
        if value != 1:
            raise ValueError(f"R version must be 1, got {value}")
        return value

    @classmethod
    def parse(cls, data: object) -> ResourceSet:
        """Validate a decoded JSON object as R, raising :class:`ResourceSetError`."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ResourceSetError(describe_validation_error("R", exc)) from exc
        except (IdsetError, HostlistError) as exc:
            raise ResourceSetError(f"invalid R: {exc}") from exc

    # --- lookups -----------------------------------------------------------
    @cached_property
    def hosts(self) -> list[str]:
        """The expanded nodelist, in rank order (the i-th host belongs to the i-th lowest rank)."""
        return expand_hostlist(self.execution.nodelist)

    @cached_property
    def _host_by_rank(self) -> dict[int, str]:
        return dict(zip(self.ranks, self.hosts, strict=False))

    @cached_property
    def _children_by_rank(self) -> dict[int, dict[str, str]]:
        return {rank: e.children for e in self.execution.R_lite for rank in e.ranks}

    @cached_property
    def ranks(self) -> list[int]:
        """All execution targets, ascending."""
        return sorted(self._children_by_rank)

    def hostname(self, rank: int) -> str:
        """Return the hostname of ``rank`` (RFC 20: hosts are assigned to ranks in order)."""
        if rank not in self._children_by_rank:
            raise ResourceSetError(f"rank {rank} is not in R")
        return self._host_by_rank[rank]

    @cached_property
    def _rank_by_host(self) -> dict[str, int]:
        """Each host's first rank (a whole machine's job asks for every host's)."""
        first: dict[str, int] = {}
        for rank, host in self._host_by_rank.items():
            first.setdefault(host, rank)
        return first

    def rank_of(self, hostname: str) -> int:
        """Return the first rank whose hostname is ``hostname``."""
        rank = self._rank_by_host.get(hostname)
        if rank is None:
            raise ResourceSetError(f"host {hostname!r} is not in R")
        return rank

    def children(self, hostname: str) -> dict[str, tuple[int, ...]]:
        """Return the resources under ``hostname``: ``{"core": (0, 1, …), "gpu": (…)}``."""
        kids = self._children_by_rank[self.rank_of(hostname)]
        return {kind: decode_idset(ids) for kind, ids in kids.items()}

    def cores(self, hostname: str) -> tuple[int, ...]:
        """Return the core ids of ``hostname``."""
        return self.children(hostname).get("core", ())

    def gpus(self, hostname: str) -> tuple[int, ...]:
        """Return the GPU ids of ``hostname`` (empty when it has none)."""
        return self.children(hostname).get("gpu", ())

    def unique_hosts(self) -> list[str]:
        """Return the hosts of all ranks without repeats, in rank order."""
        return unique_in_order(self._host_by_rank.values())

    def properties_of(self, hostname: str) -> list[str]:
        """Return the properties of ``hostname`` in the order R lists them."""
        rank = self.rank_of(hostname)
        return [
            name for name, ids in self.execution.properties.items() if rank in decode_idset(ids)
        ]

    def properties_by_rank(self) -> dict[int, list[str]]:
        """Return ``{rank: [property, …]}`` for every rank that has properties."""
        out: dict[int, list[str]] = {}
        for name, ids in self.execution.properties.items():
            for rank in decode_idset(ids):
                out.setdefault(rank, []).append(name)
        return out

    def to_json_obj(self) -> dict[str, Any]:
        """Return R as a JSON-ready dict (the form Flux stores)."""
        return self.model_dump(mode="json", exclude_none=True)


# --- building R from a Flux [resource] config table ---------------------------


class ResourceConfigEntry(BaseModel):
    """One ``[[resource.config]]`` entry of a Flux config file."""

    model_config = ConfigDict(extra="forbid")

    hosts: str
    cores: str | None = None
    gpus: str | None = None
    properties: list[str] = Field(default_factory=list)

    @field_validator("hosts")
    @classmethod
    def _hosts(cls, value: str) -> str:
        if not expand_hostlist(value):
            raise ValueError("hosts must name at least one host")
        return value

    @field_validator("cores", "gpus")
    @classmethod
    def _ids(cls, value: str | None) -> str | None:
        if value is not None:
            decode_idset(value)
        return value

    @field_validator("properties")
    @classmethod
    def _props(cls, value: list[str]) -> list[str]:
        for name in value:
            check_property_name(name)
        return value


def resource_set_from_config(entries: Sequence[Mapping[str, Any]]) -> ResourceSet:
    """Build and validate R from ``[[resource.config]]`` entries (see :func:`r_from_config`)."""
    return ResourceSet.parse(r_from_config(entries))


def r_from_config(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return R as JSON from ``[[resource.config]]`` entries, as ``flux R parse-config`` does.

    Ranks are given to hosts in order of first appearance; later entries
    naming the same host add cores, GPUs and properties to it. Ranks with
    identical children share one R_lite entry.
    """
    try:
        parsed = [ResourceConfigEntry.model_validate(e) for e in entries]
    except ValidationError as exc:
        raise ResourceSetError(describe_validation_error("resource.config", exc)) from exc
    except (IdsetError, HostlistError) as exc:
        raise ResourceSetError(f"invalid resource.config: {exc}") from exc
    if not parsed:
        raise ResourceSetError("resource.config has no entries; add [[resource.config]] tables")
    order: dict[str, int] = {}
    cores: dict[str, set[int]] = {}
    gpus: dict[str, set[int]] = {}
    props: dict[str, list[int]] = {}
    for entry in parsed:
        for host in expand_hostlist(entry.hosts):
            rank = order.setdefault(host, len(order))
            cores.setdefault(host, set()).update(decode_idset(entry.cores or ""))
            gpus.setdefault(host, set()).update(decode_idset(entry.gpus or ""))
            for name in entry.properties:
                ranks = props.setdefault(name, [])
                if rank not in ranks:
                    ranks.append(rank)
    groups: dict[tuple[str, str], list[int]] = {}
    for host, rank in order.items():
        key = (encode_idset(cores[host]), encode_idset(gpus[host]))
        if not key[0]:
            raise ResourceSetError(f"resource.config gives host {host!r} no cores")
        groups.setdefault(key, []).append(rank)
    r_lite = []
    for (core_ids, gpu_ids), ranks in groups.items():
        children = {"core": core_ids}
        if gpu_ids:
            children["gpu"] = gpu_ids
        r_lite.append({"rank": encode_idset(ranks), "children": children})
    execution: dict[str, Any] = {
        "R_lite": r_lite,
        "starttime": 0.0,
        "expiration": 0.0,
        "nodelist": [encode_hostlist(order)],
    }
    if props:
        execution["properties"] = {name: encode_idset(r) for name, r in props.items()}
    return {"version": 1, "execution": execution}

"""The rabbitmapping document and lookups both ways.

``{"computes": {compute: rabbit, ...},
   "rabbits": {rabbit: {"capacity": bytes, "hostlist": "<RFC 29 hostlist>"}, ...}}``

Validation checks that the two halves agree: every compute of a rabbit's
hostlist maps back to that rabbit, no compute sits under two rabbits, and
every mapped compute belongs to the rabbit it names.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pipeline.errors import HostlistError, RabbitMappingError
from pipeline.model.files import FileProblem, read_text
from pipeline.model.hostlist import expand_hostlist, unique_hostlist
from pipeline.model.pydantic_errors import describe_validation_error


class RabbitEntry(BaseModel):
    """One rabbit: its usable capacity and the computes cabled to it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    capacity: int = Field(ge=0)
    hostlist: str


class RabbitMapping(BaseModel):
    """A validated rabbitmapping."""

    model_config = ConfigDict(extra="forbid", strict=True)

    computes: dict[str, str]
    rabbits: dict[str, RabbitEntry]

    @model_validator(mode="after")
    def _consistent(self) -> RabbitMapping:
        owner: dict[str, str] = {}
        for rabbit, entry in self.rabbits.items():
            try:
                hosts = expand_hostlist(entry.hostlist)
            except HostlistError as exc:
                raise ValueError(f"rabbit {rabbit!r}: {exc}") from exc
            for host in hosts:
                if host in owner and owner[host] != rabbit:
                    raise ValueError(
                        f"compute {host!r} is listed under two rabbits: "
                        f"{owner[host]!r} and {rabbit!r}"
                    )
                owner[host] = rabbit
        for compute, rabbit in self.computes.items():
            if rabbit not in self.rabbits:
                raise ValueError(f"compute {compute!r} maps to unknown rabbit {rabbit!r}")
            if owner.get(compute) != rabbit:
                where = f"under rabbit {owner[compute]!r}" if compute in owner else "in no hostlist"
                raise ValueError(
                    f"compute {compute!r} maps to rabbit {rabbit!r} but is listed {where}"
                )
        for compute, rabbit in owner.items():
            if compute not in self.computes:
                raise ValueError(
                    f"compute {compute!r} is in rabbit {rabbit!r}'s hostlist but not in 'computes'"
                )
        return self

    # --- constructors ------------------------------------------------------
    @classmethod
    def parse(cls, data: object) -> RabbitMapping:
        """Validate a decoded rabbitmapping object."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise RabbitMappingError(describe_validation_error("rabbitmapping", exc)) from exc

    @classmethod
    def load(cls, path: str | Path) -> RabbitMapping:
        """Read and validate a rabbitmapping file."""
        try:
            text = read_text(path, "rabbitmapping")
        except FileProblem as exc:
            raise RabbitMappingError(str(exc)) from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RabbitMappingError(f"File '{path}' could not be parsed as JSON: {exc}") from exc
        except RecursionError:
            raise RabbitMappingError(f"File '{path}' is nested too deeply") from None
        return cls.parse(data)

    @classmethod
    def build(cls, layout: dict[str, tuple[int, Iterable[str]]]) -> RabbitMapping:
        """Build a mapping from ``{rabbit: (capacity_bytes, computes)}``."""
        from pipeline.model.hostlist import encode_hostlist

        computes: dict[str, str] = {}
        rabbits: dict[str, Any] = {}
        for rabbit, (capacity, hosts) in layout.items():
            host_list = list(hosts)
            rabbits[rabbit] = {"capacity": capacity, "hostlist": encode_hostlist(host_list)}
            for host in host_list:
                computes[host] = rabbit
        return cls.parse({"computes": computes, "rabbits": rabbits})

    # --- lookups -------------------------------------------------------------
    @cached_property
    def _hosts_of(self) -> dict[str, list[str]]:
        return {r: expand_hostlist(e.hostlist) for r, e in self.rabbits.items()}

    def rabbit_of(self, compute: str) -> str:
        """Return the rabbit of ``compute``."""
        try:
            return self.computes[compute]
        except KeyError:
            raise RabbitMappingError(f"Could not find compute {compute}") from None

    def computes_of(self, rabbit: str) -> list[str]:
        """Return the computes of ``rabbit`` in hostlist order."""
        try:
            return self._hosts_of[rabbit]
        except KeyError:
            raise RabbitMappingError(f"Could not find rabbit {rabbit}") from None

    def rabbits_of(self, computes: Iterable[str]) -> str:
        """Return the folded hostlist of the rabbits behind ``computes``."""
        return unique_hostlist([self.rabbit_of(c) for c in computes])

    def computes_of_rabbits(self, rabbits: Iterable[str]) -> str:
        """Return the folded hostlist of the computes behind ``rabbits``."""
        hosts: list[str] = []
        for rabbit in rabbits:
            hosts.extend(self.computes_of(rabbit))
        return unique_hostlist(hosts)

    def all_rabbits(self) -> str:
        """Return the folded hostlist of every rabbit."""
        return unique_hostlist(self.rabbits)

    def is_rabbit(self, host: str) -> bool:
        """Return whether ``host`` is a rabbit (not a compute)."""
        return host in self.rabbits

    def nodes_per_rabbit(self, hosts: Iterable[str]) -> dict[str, int]:
        """Count ``hosts`` (computes) under each rabbit, in first-seen order.

        Rabbit hosts in the list are skipped, as flux-coral2's ``dws.setup`` does.
        """
        counts: dict[str, int] = {}
        for host in hosts:
            if host in self.rabbits:
                continue
            rabbit = self.rabbit_of(host)
            counts[rabbit] = counts.get(rabbit, 0) + 1
        return counts

"""What the pipeline last told Flux of one rabbit, and the messages that tell it.

The record (:class:`Told`) lives in the store (``<prefix>:rabbits-told``); the rules
that change it are :mod:`pipeline.states.rabbits`. A change is a :class:`Change`: the
messages to send and the record once they are sent, written together.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class Told:
    """What Flux was last told of one rabbit, in one Flux incarnation."""

    epoch: str = ""
    ssd: str | None = None  # "up", "down", or None: nothing yet
    badrabbit: frozenset[str] = frozenset()
    drained: frozenset[str] = frozenset()
    #: computes a job gave ``badrabbit``, kept until the Storage changes
    held: frozenset[str] = frozenset()
    #: the Storage's ``resourceVersion`` the rules last decided on
    version: str = ""
    #: the Storage's ``status.status`` the rules last decided on
    status: str | None = None
    #: the rabbit's ssd vertices, as the rules last named them
    paths: tuple[str, ...] = ()
    #: jobs whose epilog went before their Teardown completed: their ssds stay down
    holders: frozenset[str] = frozenset()
    #: the rabbit's own ClientMount never came up (its node daemon down): its ssds stay
    #: down until its Storage next changes (the daemon, back, updates it)
    daemon_down: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "ssd": self.ssd,
            "badrabbit": sorted(self.badrabbit),
            "drained": sorted(self.drained),
            "held": sorted(self.held),
            "version": self.version,
            "status": self.status,
            "paths": list(self.paths),
            "holders": sorted(self.holders),
            "daemon_down": self.daemon_down,
        }

    def hold(self, computes: Collection[str], epoch: str) -> Told:
        """This record once a job gave ``computes`` ``badrabbit`` in Flux incarnation
        ``epoch`` (a record of an older incarnation starts from nothing)."""
        told = self.in_epoch(epoch)
        return replace(told, held=told.held | (frozenset(computes) - told.badrabbit))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Told:
        return cls(
            epoch=str(data.get("epoch", "")),
            ssd=data.get("ssd"),
            badrabbit=frozenset(data.get("badrabbit") or ()),
            drained=frozenset(data.get("drained") or ()),
            held=frozenset(data.get("held") or ()),
            version=str(data.get("version", "")),
            status=data.get("status"),
            paths=tuple(data.get("paths") or ()),
            holders=frozenset(data.get("holders") or ()),
            daemon_down=bool(data.get("daemon_down", False)),
        )

    def in_epoch(self, epoch: str) -> Told:
        """This record in Flux incarnation ``epoch``: one of an older incarnation keeps only
        its holds and a down daemon with the Storage version it was seen in (Flux lost
        everything else it was told)."""
        if self.epoch == epoch:
            return self
        version = self.version if self.daemon_down else ""
        return Told(
            epoch=epoch, holders=self.holders, daemon_down=self.daemon_down, version=version
        )


@dataclass(frozen=True)
class Message:
    """One outbox message: its kind and its flux-coral2 payload."""

    kind: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class Change:
    """The messages to send and what Flux then knows."""

    messages: list[Message] = field(default_factory=list)
    told: Told = Told()

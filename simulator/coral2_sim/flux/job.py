"""One job of the simulated Flux job manager: its jobspec, RFC 18 eventlog, KVS, memos,
exceptions and result, as ``flux jobs`` and ``flux job eventlog`` show them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from coral2_sim.flux.sched import Request
from pipeline.model.eventlog import EventlogEntry

STATES = ("DEPEND", "PRIORITY", "SCHED", "RUN", "CLEANUP", "INACTIVE")


@dataclass
class FluxJob:
    """One job as the job manager holds it."""

    id: int
    userid: int
    jobspec: dict[str, Any]
    runtime_s: float
    state: str = "DEPEND"
    eventlog: list[EventlogEntry] = field(default_factory=list)
    dependencies: set[str] = field(default_factory=set)
    prologs: dict[str, object | None] = field(default_factory=dict)
    epilogs: dict[str, object | None] = field(default_factory=dict)
    kvs: dict[str, Any] = field(default_factory=dict)
    memo: dict[str, Any] = field(default_factory=dict)
    exceptions: list[dict[str, Any]] = field(default_factory=list)
    aux: dict[str, Any] = field(default_factory=dict)
    hosts: list[str] = field(default_factory=list)
    ssd: dict[str, int] = field(default_factory=dict)
    request: Request | None = None
    run_until: float | None = None
    finish_status: int | None = None
    started: bool = False  # a ``start`` event was posted (the reactor asks every step)

    @property
    def system(self) -> dict[str, Any]:
        attributes = self.jobspec.setdefault("attributes", {})
        return attributes.setdefault("system", {})  # type: ignore[no-any-return]

    @property
    def dw(self) -> bool:
        return "dw" in self.system

    def events(self, name: str | None = None) -> list[EventlogEntry]:
        return [e for e in self.eventlog if name is None or e.name == name]

    @property
    def fatal(self) -> bool:
        return any(e["severity"] == 0 for e in self.exceptions)

    @property
    def result(self) -> str:
        """COMPLETED, FAILED or CANCELED, as ``flux jobs`` shows an inactive job."""
        if any(e["type"] == "cancel" for e in self.exceptions):
            return "CANCELED"
        if self.fatal or self.finish_status:
            return "FAILED"
        return "COMPLETED" if self.started else "FAILED"


def has_slot(resources: Any, label: str) -> bool:
    """Whether ``resources`` (a jobspec's, RFC 14) hold a slot labelled ``label``."""
    for resource in resources if isinstance(resources, list) else []:
        if not isinstance(resource, Mapping):
            continue
        if resource.get("type") == "slot" and resource.get("label") == label:
            return True
        if has_slot(resource.get("with"), label):
            return True
    return False

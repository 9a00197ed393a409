"""What the simulated API server serves and answers with: its resource types, its
``Status`` errors and label selectors — shared by the store and the routes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DWS = "dataworkflowservices.github.io"
NNF = "nnf.cray.hpe.com"
COORDINATION = "coordination.k8s.io"
#: lustre-fs-operator's group: LustreFileSystem, the global Lustre file systems nnf knows
LUS = "lus.cray.hpe.com"


@dataclass(frozen=True)
class ResourceType:
    """One resource type the server serves."""

    group: str
    plural: str
    kind: str
    namespaced: bool = True
    has_status: bool = False
    #: one of Kubernetes' own types, which take a strategic-merge patch (a custom
    #: resource has no schema for one)
    builtin: bool = False


RESOURCE_TYPES: tuple[ResourceType, ...] = (
    ResourceType(DWS, "workflows", "Workflow"),
    ResourceType(DWS, "directivebreakdowns", "DirectiveBreakdown", has_status=True),
    ResourceType(DWS, "servers", "Servers", has_status=True),
    ResourceType(DWS, "computes", "Computes"),
    ResourceType(DWS, "storages", "Storage", has_status=True),
    ResourceType(DWS, "clientmounts", "ClientMount", has_status=True),
    ResourceType(DWS, "systemstatuses", "SystemStatus"),
    ResourceType(DWS, "systemconfigurations", "SystemConfiguration"),
    ResourceType(DWS, "persistentstorageinstances", "PersistentStorageInstance", has_status=True),
    ResourceType(DWS, "dwdirectiverules", "DWDirectiveRule"),
    ResourceType(NNF, "nnfdatamovements", "NnfDataMovement", has_status=True),
    ResourceType(NNF, "nnfstorageprofiles", "NnfStorageProfile"),
    ResourceType(LUS, "lustrefilesystems", "LustreFileSystem", has_status=True),
    ResourceType("", "secrets", "Secret", builtin=True),
    ResourceType(COORDINATION, "leases", "Lease", builtin=True),
)
TYPES = {(t.group, t.plural): t for t in RESOURCE_TYPES}


class ApiError(Exception):
    """An error the server answers with a ``Status`` body."""

    def __init__(
        self, code: int, reason: str, message: str, metadata: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.metadata = metadata or {}  # a ListMeta: the continue token of an expired one

    def status(self) -> dict[str, Any]:
        """The ``Status`` object."""
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.metadata),
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }


def matches_labels(obj: dict[str, Any], selector: str | None) -> bool:
    """Return whether ``obj`` matches an equality label selector (``a=b,c!=d,e``)."""
    if not selector:
        return True
    labels = obj.get("metadata", {}).get("labels") or {}
    for raw in selector.split(","):
        term = raw.strip()
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key.strip()) != value.strip():
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def labels_of(obj: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The ``(label, value)`` pairs of ``obj`` that a selector can match."""
    labels = ((obj or {}).get("metadata") or {}).get("labels")
    if not isinstance(labels, dict):
        return []
    return [(k, v) for k, v in labels.items() if isinstance(v, str)]


def first_equality(selector: str | None) -> tuple[str, str] | None:
    """The first ``key=value`` term of a selector: a list needs to look at its matches only."""
    for raw in (selector or "").split(","):
        term = raw.strip()
        if "=" in term and "!=" not in term:
            key, value = term.replace("==", "=").split("=", 1)
            return key.strip(), value.strip()
    return None

"""Typed views of DWS DirectiveBreakdown objects.

Only what the workload manager reads is modelled; unknown keys are kept
(``extra="allow"``) because DWS adds fields between API versions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.errors import BreakdownError
from pipeline.model.pydantic_errors import describe_validation_error

AllocationStrategy = Literal[
    "AllocatePerCompute", "AllocateAcrossServers", "AllocateSingleServer", "AllocatePerServer"
]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Colocation(_Open):
    """``{type: exclusive, key}``: sets with the same key never share a rabbit."""

    type: str = "exclusive"
    key: str = ""


class AllocationConstraints(_Open):
    """Constraints on the rabbits an allocation set may use."""

    labels: list[str] = Field(default_factory=list)
    count: int | None = Field(default=None, ge=1)
    scale: int | None = Field(default=None, ge=1, le=10)
    colocation: list[Colocation] = Field(default_factory=list)


class AllocationSet(_Open):
    """One ``status.storage.allocationSets[]`` entry."""

    allocationStrategy: str
    minimumCapacity: int = Field(ge=1)
    label: str
    constraints: AllocationConstraints = Field(default_factory=AllocationConstraints)


class ObjectReference(_Open):
    """A Kubernetes object reference."""

    kind: str = ""
    name: str = ""
    namespace: str = ""
    fieldPath: str | None = None


class StorageBreakdown(_Open):
    """``status.storage``: present for jobdw and create_persistent."""

    allocationSets: list[AllocationSet] = Field(default_factory=list)
    lifetime: str = "job"
    reference: ObjectReference = Field(default_factory=ObjectReference)


class Access(_Open):
    """How computes must reach an allocation set."""

    type: Literal["physical", "network"]
    priority: Literal["mandatory", "bestEffort"]


class LocationConstraint(_Open):
    """One ``status.compute.constraints.location[]`` entry."""

    access: list[Access] = Field(default_factory=list)
    reference: ObjectReference = Field(default_factory=ObjectReference)


class ComputeConstraints(_Open):
    """``status.compute.constraints``."""

    location: list[LocationConstraint] = Field(default_factory=list)


class ComputeBreakdown(_Open):
    """``status.compute``: present for jobdw and persistentdw."""

    constraints: ComputeConstraints = Field(default_factory=ComputeConstraints)


class BreakdownStatus(_Open):
    """The status the DWS/NNF side fills in."""

    ready: bool = False
    storage: StorageBreakdown | None = None
    compute: ComputeBreakdown | None = None
    requires: list[str] = Field(default_factory=list)
    requiredDaemons: list[str] = Field(default_factory=list)
    error: dict[str, Any] | None = None


class DirectiveBreakdown(_Open):
    """A DirectiveBreakdown object."""

    kind: str = "DirectiveBreakdown"
    apiVersion: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: dict[str, Any] = Field(default_factory=dict)
    status: BreakdownStatus = Field(default_factory=BreakdownStatus)

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return str(self.metadata.get("name", ""))


def as_breakdowns(
    breakdowns: Sequence[Mapping[str, Any] | DirectiveBreakdown],
) -> list[DirectiveBreakdown]:
    """Validate dicts (as read from Kubernetes) or models as DirectiveBreakdowns."""
    out = []
    for index, item in enumerate(breakdowns):
        if isinstance(item, DirectiveBreakdown):
            out.append(item)
            continue
        try:
            out.append(DirectiveBreakdown.model_validate(item))
        except ValidationError as exc:
            raise BreakdownError(
                describe_validation_error(f"DirectiveBreakdown {index}", exc)
            ) from exc
    return out

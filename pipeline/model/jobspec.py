"""Jobspec ``resources`` (RFC 14, RFC 25 version 1, plus the CORAL-2 types).

A resource vertex has a ``type``, a ``count`` (≥ 1), and optionally a
``label`` (required on ``slot``), ``exclusive``, ``unit`` and ``with``
(children). Types are ``node``, ``slot``, ``core``, ``gpu``, and the
CORAL-2 graph types ``chassis``, ``ssd`` and ``storage_node``. The model
validates the shapes Flux accepts; :func:`parse_resources` raises
:class:`~pipeline.errors.JobspecError` naming every problem.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from pipeline.errors import JobspecError
from pipeline.model.pydantic_errors import describe_validation_error

ResourceType = Literal["node", "slot", "core", "gpu", "chassis", "ssd", "storage_node"]


class ResourceVertex(BaseModel):
    """One vertex of jobspec ``resources``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    type: ResourceType
    count: int = Field(ge=1)
    label: str | None = None
    exclusive: bool | None = None
    unit: str | None = None
    with_: list[ResourceVertex] | None = Field(default=None, alias="with")

    @model_validator(mode="after")
    def _shape(self) -> ResourceVertex:
        if self.type == "slot":
            if not self.label:
                raise ValueError("a 'slot' needs a 'label'")
            if not self.with_:
                raise ValueError("a 'slot' needs children in 'with'")
        if self.with_ is not None and not self.with_:
            raise ValueError(f"'with' of a '{self.type}' must not be empty")
        if self.type in {"core", "gpu", "ssd"} and self.with_:
            raise ValueError(f"a '{self.type}' cannot have children")
        return self

    def to_json_obj(self) -> dict[str, Any]:
        """Return the vertex as jobspec JSON (``with`` spelled as such)."""
        return self.model_dump(by_alias=True, exclude_none=True)


_RESOURCES = TypeAdapter(list[ResourceVertex])


def parse_resources(resources: object) -> list[ResourceVertex]:
    """Validate a jobspec ``resources`` list."""
    if not isinstance(resources, Sequence) or isinstance(resources, str):
        raise JobspecError(f"jobspec resources must be a list, got {type(resources).__name__}")
    if not resources:
        raise JobspecError("jobspec resources empty")
    try:
        return _RESOURCES.validate_python(list(resources))
    except ValidationError as exc:
        raise JobspecError(describe_validation_error("jobspec resources", exc)) from exc


def count_nodes(resources: Sequence[ResourceVertex]) -> int:
    """Return how many nodes the resources ask for (counts multiply down the tree)."""

    def walk(vertex: ResourceVertex, multiplier: int) -> int:
        total = vertex.count * multiplier
        if vertex.type == "node":
            return total
        return sum(walk(child, total) for child in vertex.with_ or [])

    return sum(walk(v, 1) for v in resources)

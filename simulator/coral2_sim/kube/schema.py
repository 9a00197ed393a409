"""The structural schema kube-apiserver applies to a custom resource before any admission
webhook validates it, for every field the pipeline writes: types and enums as the DWS
CRDs declare them (dws: ``config/crd/bases/dataworkflowservices.github.io_*.yaml``,
v1alpha7), refused with kube-apiserver's words (``k8s.io/apiextensions-apiserver``'s
validation: ``Unsupported value`` for an enum, ``must be of type`` for a type).

A field outside these is not checked here (the CRDs keep most of ``status`` open to the
controllers that write it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coral2_sim.kube.resources import DWS, ApiError, ResourceType

STATES = ("Proposal", "Setup", "DataIn", "PreRun", "PostRun", "DataOut", "Teardown")


@dataclass(frozen=True)
class Enum:
    """A string among ``values``."""

    values: tuple[str, ...]


@dataclass(frozen=True)
class Of:
    """A JSON type: ``string``, ``integer``, ``boolean``."""

    type: str


@dataclass(frozen=True)
class Items:
    """An array of ``item``."""

    item: Any


@dataclass(frozen=True)
class Values:
    """An object whose every value is ``value`` (``additionalProperties``)."""

    value: Any


STRING, INTEGER, BOOLEAN = Of("string"), Of("integer"), Of("boolean")

#: (group, plural) → the schema of the fields checked: a dict is an object's properties.
SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    (DWS, "workflows"): {
        "spec": {
            "desiredState": Enum(STATES),
            "wlmID": STRING,
            "userID": INTEGER,
            "groupID": INTEGER,
            "dwDirectives": Items(STRING),
            "hurry": BOOLEAN,
            "forceReady": BOOLEAN,
        }
    },
    (DWS, "servers"): {
        "spec": {
            "allocationSets": Items(
                {
                    "label": STRING,
                    "allocationSize": INTEGER,
                    "storage": Items({"name": STRING, "allocationCount": INTEGER}),
                }
            )
        }
    },
    (DWS, "computes"): {"data": Items({"name": STRING})},
    (DWS, "systemstatuses"): {"data": {"nodes": Values(Enum(("Enabled", "Disabled")))}},
    (DWS, "storages"): {"spec": {"state": Enum(("Enabled", "Disabled"))}},
}

_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}
_JSON_TYPE = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array"}


def _quoted(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    return str(value).lower() if isinstance(value, bool) else str(value)


def _wrong_type(path: str, value: Any, want: str) -> list[str]:
    kind = _JSON_TYPE.get(type(value), "object")
    return [f'{path}: Invalid value: "{kind}": {path} in body must be of type {want}: "{kind}"']


def _problems(schema: Any, value: Any, path: str) -> list[str]:
    if value is None:
        return []  # absent (or null: dropped), as a field the schema allows to be missing
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            return _wrong_type(path, value, "object")
        return [
            p
            for key, sub in schema.items()
            for p in _problems(sub, value.get(key), f"{path}.{key}" if path else key)
        ]
    if isinstance(schema, Items):
        if not isinstance(value, list):
            return _wrong_type(path, value, "array")
        return [p for i, v in enumerate(value) for p in _problems(schema.item, v, f"{path}[{i}]")]
    if isinstance(schema, Values):
        if not isinstance(value, dict):
            return _wrong_type(path, value, "object")
        return [p for k, v in value.items() for p in _problems(schema.value, v, f"{path}.{k}")]
    if isinstance(schema, Enum):
        if value in schema.values:
            return []
        supported = ", ".join(f'"{v}"' for v in schema.values)
        return [f"{path}: Unsupported value: {_quoted(value)}: supported values: {supported}"]
    assert isinstance(schema, Of)
    return [] if _TYPES[schema.type](value) else _wrong_type(path, value, schema.type)


def check(rtype: ResourceType, obj: dict[str, Any]) -> None:
    """Refuse ``obj`` (422 Invalid) when a field the schema checks has the wrong type or
    value, as kube-apiserver does before any webhook."""
    schema = SCHEMAS.get((rtype.group, rtype.plural))
    if schema is None:
        return
    problems = _problems(schema, obj, "")
    if not problems:
        return
    name = (obj.get("metadata") or {}).get("name", "")
    listed = problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]"
    raise ApiError(422, "Invalid", f'{rtype.kind}.{rtype.group} "{name}" is invalid: {listed}')


__all__ = ["SCHEMAS", "STATES", "check"]

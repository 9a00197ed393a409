"""What the simulated API server says about itself, so that an admin's ``kubectl`` works:
``/version``, API discovery (``/api``, ``/apis``, each group and version) and OpenAPI v3
documents for every resource type it holds.

kubectl resolves ``storages`` to its group, version and scope from discovery;
it validates a manifest on the server (``fieldValidation=Strict``) once the
OpenAPI v3 document of the resource's group-version shows that its PATCH takes
that parameter; and it prints a ``Table`` the server builds for ``get``. The
documents describe each custom resource as DWS's CRDs do at the top level
(``apiVersion``, ``kind``, ``metadata``, ``spec``, ``status``) and leave the
inside of ``spec`` and ``status`` open.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import cache
from typing import Any

from coral2_sim.kube.resources import (
    COORDINATION,
    DWS,
    LUS,
    NNF,
    RESOURCE_TYPES,
    ApiError,
    ResourceType,
)

#: Versions served per group, preferred first (what the pipeline's clients probe).
VERSIONS: dict[str, tuple[str, ...]] = {
    DWS: ("v1alpha7", "v1alpha6"),
    # as nnf-sos's CRDs do: v1alpha9 is not served any more, v1alpha8 is gone
    NNF: ("v1alpha11", "v1alpha10"),
    "": ("v1",),
    COORDINATION: ("v1",),
    LUS: ("v1beta1",),
}
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SHORT_NAMES = {"workflows": ["wf"], "directivebreakdowns": ["dbd"], "clientmounts": ["cm"]}
#: Top-level fields of each object, and ObjectMeta's fields (fieldValidation=Strict)
TOP_FIELDS = frozenset({"apiVersion", "kind", "metadata", "spec", "status", "data", "type"})
META_FIELDS = frozenset(
    {
        "name", "generateName", "namespace", "uid", "resourceVersion", "generation",
        "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
        "annotations", "ownerReferences", "finalizers", "managedFields", "selfLink",
    }
)  # fmt: skip
VERSION_INFO = {
    "major": "1",
    "minor": "30",
    "gitVersion": "v1.30.0+coral2-pipeline-sim",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.22.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def _types(group: str) -> list[ResourceType]:
    return [t for t in RESOURCE_TYPES if t.group == group]


def _group_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def _resource_list(group: str, version: str) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for rtype in _types(group):
        resources.append(
            {
                "name": rtype.plural,
                "singularName": rtype.kind.lower(),
                "namespaced": rtype.namespaced,
                "kind": rtype.kind,
                "verbs": VERBS,
                "shortNames": SHORT_NAMES.get(rtype.plural, []),
                "storageVersionHash": hashlib.sha256(rtype.plural.encode()).hexdigest()[:12],
            }
        )
        if rtype.has_status:
            resources.append(
                {
                    "name": f"{rtype.plural}/status",
                    "singularName": "",
                    "namespaced": rtype.namespaced,
                    "kind": rtype.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": _group_version(group, version),
        "resources": resources,
    }


def _group(group: str) -> dict[str, Any]:
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in VERSIONS[group]]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": versions,
        "preferredVersion": versions[0],
    }


def _object_schema(rtype: ResourceType, group: str, version: str) -> dict[str, Any]:
    gvk = [{"group": group, "version": version, "kind": rtype.kind}]
    open_object = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "type": "object",
        "description": f"{rtype.kind} ({_group_version(group, version)}), as DWS defines it",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": "#/components/schemas/ObjectMeta"},
            "spec": open_object,
            "status": open_object,
            "data": open_object,
        },
        "x-kubernetes-group-version-kind": gvk,
    }


def _param(name: str, where: str = "query", required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": where, "required": required, "schema": {"type": "string"}}


def _operation(rtype: ResourceType, group: str, version: str, verb: str) -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{rtype.kind}"}
    content = {"application/json": {"schema": ref}}
    op: dict[str, Any] = {
        "operationId": f"{verb}{rtype.kind}",
        "responses": {"200": {"description": "OK", "content": content}},
        "x-kubernetes-action": verb,
        "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": rtype.kind},
        "parameters": [_param("dryRun"), _param("fieldManager")],
    }
    if verb in ("post", "put", "patch"):
        op["parameters"].append(_param("fieldValidation"))
        op["requestBody"] = {"content": {"application/json": {"schema": ref}}}
    return op


def _paths(rtype: ResourceType, group: str, version: str) -> dict[str, Any]:
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    scope = f"{base}/namespaces/{{namespace}}" if rtype.namespaced else base
    ops = {verb: _operation(rtype, group, version, verb) for verb in ("get", "post")}
    item = {
        verb: _operation(rtype, group, version, verb) for verb in ("get", "put", "patch", "delete")
    }
    paths = {f"{scope}/{rtype.plural}": ops, f"{scope}/{rtype.plural}/{{name}}": item}
    if rtype.namespaced:
        paths[f"{base}/{rtype.plural}"] = {"get": _operation(rtype, group, version, "get")}
    return paths


@cache
def openapi_v3(group: str, version: str) -> dict[str, Any]:
    """The OpenAPI v3 document of one group-version."""
    schemas: dict[str, Any] = {
        "ObjectMeta": {
            "type": "object",
            "properties": {name: {"type": "string"} for name in sorted(META_FIELDS)}
            | {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                "finalizers": {"type": "array", "items": {"type": "string"}},
                "generation": {"type": "integer"},
                "ownerReferences": {"type": "array", "items": {"type": "object"}},
                "managedFields": {"type": "array", "items": {"type": "object"}},
            },
        }
    }
    paths: dict[str, Any] = {}
    for rtype in _types(group):
        schemas[rtype.kind] = _object_schema(rtype, group, version)
        paths.update(_paths(rtype, group, version))
    return {
        "openapi": "3.0.0",
        "info": {"title": "coral2-pipeline simulated API server", "version": version},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _digest(doc: dict[str, Any]) -> str:
    return hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()


def openapi_v3_index() -> dict[str, Any]:
    """``/openapi/v3``: where each group-version's document is."""
    paths: dict[str, Any] = {}
    for group, versions in VERSIONS.items():
        for version in versions:
            key = f"apis/{group}/{version}" if group else f"api/{version}"
            doc = openapi_v3(group, version)
            paths[key] = {"serverRelativeURL": f"/openapi/{'v3'}/{key}?hash={_digest(doc)}"}
    return {"paths": paths}


def discovery(path: str) -> dict[str, Any] | None:
    """The answer to a GET of a discovery or OpenAPI path; None for any other path."""
    if path == "/version":
        return VERSION_INFO
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
    if path == "/apis":
        groups = [_group(g) for g in VERSIONS if g]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
    if path == "/openapi/v3":
        return openapi_v3_index()
    parts = path.strip("/").split("/")
    if parts[:2] == ["openapi", "v3"]:
        if parts[2:3] == ["api"] and len(parts) == 4:
            group, version = "", parts[3]
        elif parts[2:3] == ["apis"] and len(parts) == 5:
            group, version = parts[3], parts[4]
        else:
            group, version = "", ""
        if version in VERSIONS.get(group, ()):
            return openapi_v3(group, version)
        raise ApiError(404, "NotFound", f"no OpenAPI document for {path}")
    if parts[0] == "api" and len(parts) == 2 and parts[1] == "v1":
        return _resource_list("", "v1")
    if parts[0] == "apis" and len(parts) == 2 and parts[1] in VERSIONS:
        return _group(parts[1])
    if parts[0] == "apis" and len(parts) == 3 and parts[2] in VERSIONS.get(parts[1], ()):
        return _resource_list(parts[1], parts[2])
    return None


def unknown_fields(body: dict[str, Any]) -> list[str]:
    """Fields of ``body`` that no DWS object has (what ``fieldValidation=Strict`` refuses)."""
    unknown = [f for f in body if f not in TOP_FIELDS]
    meta = body.get("metadata")
    if isinstance(meta, dict):
        unknown += [f"metadata.{f}" for f in meta if f not in META_FIELDS]
    return sorted(unknown)


def _age(created: str | None, now: datetime) -> str:
    if not created:
        return "<unknown>"
    try:
        seconds = int(
            (now - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds()
        )
    except ValueError:
        return "<unknown>"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= 2 * size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


#: Extra columns kubectl shows per resource (as DWS's printer columns do)
COLUMNS: dict[str, list[tuple[str, str]]] = {
    "workflows": [
        ("State", "status.state"),
        ("Ready", "status.ready"),
        ("Status", "status.status"),
    ],
    "storages": [("State", "spec.state"), ("Status", "status.status")],
    "clientmounts": [("Desiredstate", "spec.desiredState")],
}


def _field(obj: dict[str, Any], path: str) -> Any:
    value: Any = obj
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def table(rtype: ResourceType, items: Iterable[dict[str, Any]], rv: str) -> dict[str, Any]:
    """A ``meta.k8s.io/v1`` Table of ``items``, as kubectl asks ``get`` for."""
    extra = COLUMNS.get(rtype.plural, [])
    columns = [{"name": "Name", "type": "string", "format": "name", "description": "name"}]
    columns += [{"name": n, "type": "string", "format": "", "description": p} for n, p in extra]
    columns.append({"name": "Age", "type": "string", "format": "", "description": "age"})
    now = datetime.now(UTC)
    rows = []
    for obj in items:
        meta = obj.get("metadata") or {}
        cells = [meta.get("name", "")]
        cells += ["" if (v := _field(obj, p)) is None else str(v) for _, p in extra]
        cells.append(_age(meta.get("creationTimestamp"), now))
        partial = {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": meta,
        }
        rows.append({"cells": cells, "object": partial})
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv},
        "columnDefinitions": columns,
        "rows": rows,
    }


def wants_table(accept: str) -> bool:
    """Whether an Accept header asks for a ``meta.k8s.io/v1`` Table first."""
    first = accept.split(",", maxsplit=1)[0]
    return "as=Table" in first and "v=v1" in first


def kubeconfig(
    url: str, namespace: str = "default", token: str | None = None, ca_pem: bytes | None = None
) -> str:
    """A kubeconfig for ``kubectl`` (or the official client) to reach the server at ``url``,
    as the user of ``token`` (none: anonymous, for a server that authenticates nobody),
    trusting ``ca_pem`` for an ``https://`` URL."""
    user = f'{{token: "{token}"}}' if token else "{}"
    ca = f"    certificate-authority-data: {base64.b64encode(ca_pem).decode()}\n" if ca_pem else ""
    return (
        "apiVersion: v1\nkind: Config\n"
        f'clusters:\n- name: coral2-sim\n  cluster:\n    server: "{url}"\n{ca}'
        f"users:\n- name: admin\n  user: {user}\n"
        "contexts:\n- name: coral2-sim\n  context:\n    cluster: coral2-sim\n    user: admin\n"
        f"    namespace: {namespace}\n"
        "current-context: coral2-sim\n"
    )

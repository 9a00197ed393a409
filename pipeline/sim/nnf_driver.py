"""The simulated nnf driver: what NNF does for each directive in each state (dws.md §1.8).

:func:`work` is called by the DWS controller for one driver entry of the
current state and returns the entry's new fields. It talks to the API
server only through the DWS client, creating and checking the children
(DirectiveBreakdowns, Servers, PersistentStorageInstances, ClientMounts)
the way nnf does, and renders faults in the §1.9 formats.
"""

from __future__ import annotations

import time
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pipeline.clients.k8s import DWS_GROUP, WORKFLOW_LABEL, DwsClient
from pipeline.errors import AlreadyExists, DirectiveError, NotFound
from pipeline.model.directives import (
    Copy,
    CreatePersistent,
    DestroyPersistent,
    Directive,
    JobDW,
    PersistentDW,
    check_workflow,
    parse_directive,
)
from pipeline.model.nnf import breakdown_for

Severity = Literal["Minor", "Major", "Fatal"]
ErrorType = Literal["User", "WLM", "Internal"]
NNF_CLIENTMOUNT_FINALIZER = "nnf.cray.hpe.com/nnf_clientmount"


@dataclass(frozen=True)
class DriverFault:
    """Make the entry (``state``, ``index``) fail: Fatal → Error, Major → TransientCondition.

    With ``seconds`` the fault clears after that long in the state (a
    TransientCondition that recovers).
    """

    state: str
    index: int = 0
    severity: Severity = "Fatal"
    type: ErrorType = "Internal"
    message: str = "injected fault"
    seconds: float | None = None


@dataclass
class Faults:
    """Every fault the simulated DWS side can show."""

    errors: list[DriverFault] = field(default_factory=list)
    hang_states: set[str] = field(default_factory=set)
    never_mount: set[str] = field(default_factory=set)
    never_unmount: set[str] = field(default_factory=set)


class Waiting(Exception):
    """The entry is not done yet; ``message`` is nnf's wait reason."""


class Failed(Exception):
    """The entry failed with a ResourceError."""

    def __init__(self, severity: Severity, kind: ErrorType, message: str) -> None:
        super().__init__(message)
        self.severity = severity
        self.kind = kind
        self.message = message


def error_fields(severity: Severity, kind: ErrorType, message: str) -> dict[str, Any]:
    """Driver entry fields for a ResourceError (dws.md §1.9)."""
    status = {"Fatal": "Error", "Major": "TransientCondition", "Minor": "Running"}[severity]
    return {
        "status": status,
        "message": f"{kind} error: {message}",
        "error": f"{kind.lower()} error: {message}",
        "completed": False,
    }


@dataclass
class Context:
    """What the driver needs about one Workflow."""

    dws: DwsClient
    workflow: dict[str, Any]
    directives: list[Directive | None]
    faults: Faults
    state_started: float
    mount_agent: bool
    mount_timeout_s: float

    @property
    def name(self) -> str:
        """The Workflow name."""
        return str(self.workflow["metadata"]["name"])

    @property
    def uid(self) -> str:
        """The Workflow uid (mount paths are built from it)."""
        return str(self.workflow["metadata"].get("uid", "uid"))

    def mount_path(self, index: int) -> str:
        """nnf's default compute mount path for directive ``index``."""
        return f"/mnt/nnf/{self.uid}-{index}"


def parse_all(lines: list[str]) -> list[Directive | None]:
    """Parse each line, keeping None for lines the ruleset rejects."""
    out: list[Directive | None] = []
    for line in lines:
        try:
            out.append(parse_directive(line))
        except DirectiveError:
            out.append(None)
    return out


def micro_time() -> str:
    """A Kubernetes MicroTime for now."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --- per state ---------------------------------------------------------------


def _proposal(ctx: Context, index: int, d: Directive) -> None:
    problem = check_workflow([x for x in ctx.directives if x is not None])
    if problem is not None:
        where, _, text = problem.partition(": ")
        failing = int(where.split()[-1])
        if failing == index:
            raise Failed("Fatal", "User", text.removeprefix("User error: "))
        return
    spec = ctx.workflow["spec"]
    if isinstance(d, PersistentDW):
        try:
            ctx.dws.get("persistentstorageinstances", d.name)
        except NotFound:
            raise Failed(
                "Fatal", "User", f"PersistentStorageInstance '{d.name}' not found"
            ) from None
    breakdown = breakdown_for(d, workflow=ctx.name, index=index, userid=int(spec.get("userID", 0)))
    if breakdown is None:
        return
    status = breakdown.pop("status")
    with suppress(AlreadyExists):
        ctx.dws.create("directivebreakdowns", breakdown)
    ctx.dws.patch(
        "directivebreakdowns", breakdown["metadata"]["name"], {"status": status}, status=True
    )
    if isinstance(d, JobDW):
        with suppress(AlreadyExists):
            ctx.dws.create(
                "servers",
                {
                    "metadata": {
                        "name": f"{ctx.name}-{index}",
                        "labels": {WORKFLOW_LABEL: ctx.name},
                    },
                    "spec": {},
                },
            )
    if isinstance(d, CreatePersistent):
        psi = {
            "metadata": {"name": d.name},
            "spec": {
                "name": d.name,
                "fsType": d.fs_type,
                "dwDirective": d.line,
                "userID": int(spec.get("userID", 0)),
                "state": "Active",
                "consumerReferences": [],
            },
        }
        with suppress(AlreadyExists):
            ctx.dws.create("persistentstorageinstances", psi)
        with suppress(AlreadyExists):
            ctx.dws.create("servers", {"metadata": {"name": d.name}, "spec": {}})


def _check_servers(ctx: Context, index: int, d: JobDW | CreatePersistent) -> None:
    servers_name = d.name if isinstance(d, CreatePersistent) else f"{ctx.name}-{index}"
    breakdown = ctx.dws.get("directivebreakdowns", f"{ctx.name}-{index}")
    wanted = breakdown["status"]["storage"]["allocationSets"]
    servers = ctx.dws.get("servers", servers_name)
    given = servers.get("spec", {}).get("allocationSets") or []
    if len(given) != len(wanted) or {s["label"] for s in given} != {s["label"] for s in wanted}:
        raise Failed("Fatal", "WLM", "Allocation request does not meet directive requirements")
    used: dict[str, int] = {}
    for want in wanted:
        got = next(s for s in given if s["label"] == want["label"])
        storage = got.get("storage") or []
        total = sum(int(s.get("allocationCount", 0)) for s in storage)
        size = int(got.get("allocationSize", 0))
        strategy = want["allocationStrategy"]
        ok = (
            (len(storage) == 1 and total == 1)
            if strategy == "AllocateSingleServer"
            else size * total >= want["minimumCapacity"]
            if strategy == "AllocateAcrossServers"
            else size >= want["minimumCapacity"]
        )
        if not ok:
            raise Failed("Fatal", "WLM", "storage directive requirements were not satisfied")
        for entry in storage:
            used[entry["name"]] = used.get(entry["name"], 0) + size * int(entry["allocationCount"])
    for rabbit, amount in used.items():
        try:
            capacity = int(ctx.dws.get("storages", rabbit).get("status", {}).get("capacity", 0))
        except NotFound:
            raise Failed(
                "Fatal", "WLM", "storage directive requirements were not satisfied"
            ) from None
        if amount > capacity:
            raise Failed("Fatal", "WLM", f"{rabbit}: insufficient capacity available")
    ctx.dws.patch(
        "servers",
        servers_name,
        {
            "status": {
                "ready": True,
                "allocationSets": [
                    {
                        "label": s["label"],
                        "storage": {
                            e["name"]: {"allocationSize": s["allocationSize"], "ready": True}
                            for e in s.get("storage") or []
                        },
                    }
                    for s in given
                ],
            }
        },
        status=True,
    )


def _setup(ctx: Context, index: int, d: Directive) -> None:
    if isinstance(d, JobDW | CreatePersistent):
        _check_servers(ctx, index, d)
    elif isinstance(d, PersistentDW):
        psi = ctx.dws.get("persistentstorageinstances", d.name)
        if psi.get("spec", {}).get("state") != "Active":
            raise Failed("Fatal", "User", "PersistentStorage is not active")
        refs = psi["spec"].get("consumerReferences") or []
        ref = {"kind": "Workflow", "name": f"{ctx.name}-{index}", "namespace": ctx.dws.namespace}
        if ref not in refs:
            ctx.dws.patch(
                "persistentstorageinstances", d.name, {"spec": {"consumerReferences": [*refs, ref]}}
            )


def _mounts(ctx: Context, index: int) -> list[dict[str, Any]]:
    items, _ = ctx.dws.list_objects(
        "clientmounts",
        selector=f"{WORKFLOW_LABEL}={ctx.name},nnf.cray.hpe.com/target_directive_index={index}",
        all_namespaces=True,
    )
    return items


def _mount_state(ctx: Context, index: int, d: Directive, desired: str) -> None:
    """Drive the ClientMounts of directive ``index`` to ``desired`` and wait for them."""
    computes = ctx.dws.get("computes", ctx.name).get("data") or []
    nodes = [c["name"] for c in computes]
    existing = {m["metadata"]["namespace"]: m for m in _mounts(ctx, index)}
    name = f"default-{ctx.name}-{index}-computes"
    fs_type = d.fs_type if isinstance(d, JobDW) else "lustre"
    for node in nodes:
        if node not in existing:
            if desired != "mounted":
                continue
            body = {
                "metadata": {
                    "name": name,
                    "namespace": node,
                    "finalizers": [NNF_CLIENTMOUNT_FINALIZER],
                    "labels": {
                        WORKFLOW_LABEL: ctx.name,
                        "dataworkflowservices.github.io/workflow.namespace": ctx.dws.namespace,
                        "nnf.cray.hpe.com/target_directive_index": str(index),
                    },
                },
                "spec": {
                    "node": node,
                    "desiredState": "mounted",
                    "mounts": [
                        {
                            "mountPath": ctx.mount_path(index),
                            "type": "none" if fs_type == "raw" else fs_type,
                            "targetType": "file" if fs_type == "raw" else "directory",
                        }
                    ],
                },
            }
            with suppress(AlreadyExists):
                ctx.dws.create("clientmounts", body, namespace=node)
        elif existing[node]["spec"].get("desiredState") != desired:
            ctx.dws.patch("clientmounts", name, {"spec": {"desiredState": desired}}, namespace=node)
        current = existing.get(node, {}).get("status", {})
        already = current.get("allReady") and all(
            m.get("state") == desired for m in current.get("mounts", [])
        )
        if ctx.mount_agent and not already:
            stuck = ctx.faults.never_mount if desired == "mounted" else ctx.faults.never_unmount
            if node not in stuck:
                ctx.dws.patch(
                    "clientmounts",
                    name,
                    {"status": {"allReady": True, "mounts": [{"state": desired, "ready": True}]}},
                    namespace=node,
                    status=True,
                )
    pending = [
        m["metadata"]["namespace"]
        for m in _mounts(ctx, index)
        if not (
            m.get("status", {}).get("allReady")
            and all(x.get("state") == desired for x in m["status"].get("mounts", []))
        )
    ]
    if pending:
        if time.monotonic() - ctx.state_started > ctx.mount_timeout_s:
            verb = "mount file system on" if desired == "mounted" else "unmount file system from"
            raise Failed("Major", "Internal", f"unable to {verb} client nodes")
        raise Waiting("pending mount" if desired == "mounted" else "pending unmount")


def _env(ctx: Context) -> dict[str, str]:
    env: dict[str, str] = {}
    jobs, persistents = [], []
    for index, d in enumerate(ctx.directives):
        path = ctx.mount_path(index)
        if isinstance(d, JobDW):
            env[f"DW_JOB_{d.name.replace('-', '_')}"] = path
            env.setdefault(f"DW_JOB_{d.fs_type.upper()}", path)
            jobs.append(f"{d.name}:{path}")
        elif isinstance(d, PersistentDW):
            env[f"DW_PERSISTENT_{d.name.replace('-', '_')}"] = path
            persistents.append(f"{d.name}:{path}")
    if jobs:
        env["DW_JOBS"] = ",".join(jobs)
    if persistents:
        env["DW_PERSISTENTS"] = ",".join(persistents)
    return env


def _teardown(ctx: Context, index: int, d: Directive) -> None:
    for mount in _mounts(ctx, index):
        node = mount["metadata"]["namespace"]
        ctx.dws.patch(
            "clientmounts",
            mount["metadata"]["name"],
            {"metadata": {"finalizers": None}},
            namespace=node,
        )
        ctx.dws.delete("clientmounts", mount["metadata"]["name"], namespace=node)
    if isinstance(d, DestroyPersistent):
        with suppress(NotFound):
            psi = ctx.dws.get("persistentstorageinstances", d.name)
            if psi.get("spec", {}).get("consumerReferences"):
                raise Failed("Fatal", "User", "persistent storage cannot be deleted while in use")
            ctx.dws.delete("persistentstorageinstances", d.name)
    if isinstance(d, PersistentDW):
        with suppress(NotFound):
            psi = ctx.dws.get("persistentstorageinstances", d.name)
            refs = [
                r
                for r in psi["spec"].get("consumerReferences") or []
                if r.get("name") != f"{ctx.name}-{index}"
            ]
            ctx.dws.patch(
                "persistentstorageinstances", d.name, {"spec": {"consumerReferences": refs}}
            )
    if isinstance(d, JobDW):
        with suppress(NotFound):
            servers = ctx.dws.get("servers", f"{ctx.name}-{index}")
            emptied = [
                {
                    **s,
                    "storage": {
                        r: {**v, "allocationSize": 0} for r, v in (s.get("storage") or {}).items()
                    },
                }
                for s in servers.get("status", {}).get("allocationSets") or []
            ]
            ctx.dws.patch(
                "servers",
                f"{ctx.name}-{index}",
                {"status": {"allocationSets": emptied}},
                status=True,
            )


def work(ctx: Context, entry: dict[str, Any], latency_s: float) -> dict[str, Any] | None:
    """Advance one driver entry of the current state; return its new fields, or None for later."""
    state, index = entry["watchState"], int(entry["dwdIndex"])
    elapsed = time.monotonic() - ctx.state_started
    for fault in ctx.faults.errors:
        if (fault.state, fault.index) == (state, index) and (
            fault.seconds is None or elapsed < fault.seconds
        ):
            return error_fields(fault.severity, fault.type, fault.message)
    if state in ctx.faults.hang_states:
        return {"status": "Running", "message": "hang (injected)"}
    if elapsed < latency_s:
        return None
    d = ctx.directives[index] if index < len(ctx.directives) else None
    if d is None:
        return error_fields("Fatal", "Internal", "directive could not be parsed")
    try:
        if state == "Proposal":
            _proposal(ctx, index, d)
        elif state == "Setup":
            _setup(ctx, index, d)
        elif state in ("PreRun", "PostRun") and isinstance(d, JobDW | PersistentDW):
            _mount_state(ctx, index, d, "mounted" if state == "PreRun" else "unmounted")
        elif state == "Teardown":
            _teardown(ctx, index, d)
        elif state in ("DataIn", "DataOut") and not isinstance(d, Copy):
            pass
    except Failed as exc:
        return error_fields(exc.severity, exc.kind, exc.message)
    except Waiting as exc:
        return {"status": "Running", "message": str(exc), "completed": False}
    return {
        "status": "Completed",
        "completed": True,
        "message": "",
        "error": "",
        "completeTime": micro_time(),
    }


def env_for(ctx: Context) -> dict[str, str]:
    """The ``status.env`` additions nnf writes at the end of PreRun."""
    return _env(ctx)


__all__ = [
    "DWS_GROUP",
    "Context",
    "DriverFault",
    "Faults",
    "Waiting",
    "env_for",
    "parse_all",
    "work",
]

"""ClientMounts and NnfDataMovements in the simulated nnf driver (mounts per compute in
PreRun/PostRun, a finished data movement per copy directive, all gone in Teardown, where
each compute's unmount is waited for unless nnf sees that compute as down).

Which compute mounts which allocation is decided as nnf-sos's access controller does
(``mapClientLocalStorage``, internal/controller/nnf_access_controller.go): each rabbit's
allocations go, one each, to the computes its Storage lists in ``status.access.computes``;
a compute behind no rabbit holding an allocation gets a ClientMount with no mounts, and a
rabbit listing more of the job's computes than it holds allocations fails PreRun."""

from __future__ import annotations

import time
from contextlib import suppress
from typing import Any

from coral2_sim.dws.nnf_context import NNF_CLIENTMOUNT_FINALIZER, Context, Failed, Waiting
from pipeline.clients.k8s import WORKFLOW_LABEL, DwsClient
from pipeline.errors import AlreadyExists, NotFound
from pipeline.model.directives import CreatePersistent, Directive, JobDW, PersistentDW


def delete_clientmounts(dws: DwsClient, items: list[dict[str, Any]]) -> None:
    """Drop nnf's finalizer from each ClientMount and delete it."""
    for mount in items:
        node, name = mount["metadata"]["namespace"], mount["metadata"]["name"]
        dws.patch("clientmounts", name, {"metadata": {"finalizers": None}}, namespace=node)
        dws.delete("clientmounts", name, namespace=node)


#: How nnf sees a compute it will not wait on: in SystemStatus, and in its Rabbit's Storage.
DOWN_IN_SYSTEMSTATUS = {"Disabled"}
DOWN_IN_STORAGE = {"Offline", "Fenced"}


def _unmounted(mount: dict[str, Any]) -> bool:
    status = mount.get("status") or {}
    states = [m.get("state") for m in status.get("mounts") or []]
    return bool(status.get("allReady")) and all(state == "unmounted" for state in states)


def down_computes(dws: DwsClient) -> set[str]:
    """The computes nnf treats as down: Disabled in SystemStatus, or Offline or Fenced in
    their Rabbit's Storage."""
    down: set[str] = set()
    with suppress(NotFound):
        nodes = (dws.get("systemstatuses", "default").get("data") or {}).get("nodes") or {}
        down |= {node for node, state in nodes.items() if state in DOWN_IN_SYSTEMSTATUS}
    storages, _ = dws.list_objects("storages")
    for storage in storages:
        access = (storage.get("status") or {}).get("access") or {}
        for compute in access.get("computes") or []:
            if compute.get("status") in DOWN_IN_STORAGE:
                down.add(str(compute.get("name")))
    return down


def release_mounts(ctx: Context, index: int) -> None:
    """Teardown: each of directive ``index``'s ClientMounts unmounted, then deleted. nnf
    waits for a compute's unmount, however long it takes (its timeout covers only a
    ClientMount never reconciled), unless it sees that compute as down
    (:func:`down_computes`): then it drops the finalizer at once. A rabbit's own
    ClientMount left from a job that skipped PostRun is unmounted by the rabbit's
    nnf-node-manager, which the driver plays (:func:`drive_rabbit_mounts`)."""
    mounts = mounts_of(ctx, index)
    gone, waiting = [], []
    for mount in mounts:
        node, name = mount["metadata"]["namespace"], mount["metadata"]["name"]
        if _unmounted(mount):
            gone.append(mount)
            continue
        if mount["spec"].get("desiredState") != "unmounted":
            ctx.dws.patch(
                "clientmounts", name, {"spec": {"desiredState": "unmounted"}}, namespace=node
            )
        plays_daemon = ctx.mount_agent or name.endswith("-servers")
        if plays_daemon and node not in ctx.faults.never_unmount:
            gone.append(mount)  # the driver plays the daemon: unmounted at once
        else:
            waiting.append(mount)
    if waiting:
        down = down_computes(ctx.dws)
        gone += [m for m in waiting if m["metadata"]["namespace"] in down]
        waiting = [m for m in waiting if m["metadata"]["namespace"] not in down]
    delete_clientmounts(ctx.dws, gone)
    if waiting:
        raise Waiting("pending unmount")


def mounts_of(ctx: Context, index: int) -> list[dict[str, Any]]:
    items, _ = ctx.dws.list_objects(
        "clientmounts",
        selector=f"{WORKFLOW_LABEL}={ctx.name},nnf.cray.hpe.com/target_directive_index={index}",
        all_namespaces=True,
    )
    return items


#: nnf-sos's words when a rabbit's Storage lists more of the job's computes than the rabbit
#: holds allocations for (``mapClientLocalStorage``; a Fatal WLM error).
TOO_MANY_CLIENTS = "invalid matching between clients and storage. Too many clients for storage"


def servers_name(ctx: Context, index: int, d: Directive) -> str:
    """The Servers object holding directive ``index``'s allocations (a persistentdw's is
    its persistent storage's)."""
    return d.name if isinstance(d, PersistentDW | CreatePersistent) else f"{ctx.name}-{index}"


def fs_type_of(ctx: Context, d: Directive) -> str:
    """The file system directive ``d`` mounts: a jobdw's own type; a persistentdw's, that of
    the instance it names (its ``spec.fsType``), as nnf's access controller reads it from
    the instance's NnfStorage — an xfs, gfs2 or raw instance is rabbit-local storage, handed
    out per rabbit as a jobdw's is, never network storage."""
    if isinstance(d, JobDW):
        return d.fs_type
    if isinstance(d, PersistentDW):
        with suppress(NotFound):
            psi = ctx.dws.get("persistentstorageinstances", d.name)
            return str((psi.get("spec") or {}).get("fsType") or "lustre")
    return "lustre"


def held_per_rabbit(ctx: Context, index: int, d: Directive) -> dict[str, int]:
    """How many of directive ``index``'s allocations each rabbit holds, by its Servers'
    ``spec.allocationSets`` (none while the Servers is missing)."""
    held: dict[str, int] = {}
    with suppress(NotFound):
        servers = ctx.dws.get("servers", servers_name(ctx, index, d))
        for aset in (servers.get("spec") or {}).get("allocationSets") or []:
            for entry in aset.get("storage") or []:
                rabbit = str(entry.get("name"))
                held[rabbit] = held.get(rabbit, 0) + int(entry.get("allocationCount") or 0)
    return held


def allocations_per_compute(
    ctx: Context, index: int, d: Directive, computes: list[str]
) -> dict[str, int]:
    """How many of directive ``index``'s allocations each compute mounts, as nnf's access
    controller hands them out (target ``single``): a rabbit whose storage never came up
    (``faults.slow_rabbits``, a Setup forced ready without it) has no NnfNodeStorage, a
    Major error with no user message; lustre is network storage, which every compute
    mounts; rabbit-local storage goes one allocation each to the computes each
    rabbit's Storage lists, in that list's order. Raises :class:`Failed` (Fatal, WLM) when
    a rabbit has more such computes than allocations."""
    fs_type = fs_type_of(ctx, d)
    if fs_type == "lustre":
        return dict.fromkeys(computes, 1)
    held = held_per_rabbit(ctx, index, d)
    for rabbit in held:
        if rabbit in ctx.faults.slow_rabbits:  # its storage never came up in Setup
            raise Failed(
                "Major",
                "Internal",
                "",
                debug="incorrect number of NnfNodeStorages. found 0. Needed 1.",
            )
    out = dict.fromkeys(computes, 0)
    for rabbit, count in held.items():
        try:
            access = (ctx.dws.get("storages", rabbit).get("status") or {}).get("access") or {}
        except NotFound:
            continue
        nodes = [*(access.get("computes") or []), *(access.get("servers") or [])]
        clients = [str(c.get("name")) for c in nodes if c.get("name") in out]
        if len(clients) > count:
            raise Failed("Fatal", "WLM", TOO_MANY_CLIENTS)
        for client in clients:
            out[client] += 1
    return out


def clientmount_body(
    ctx: Context, index: int, name: str, node: str, fs_type: str, paths: list[str]
) -> dict[str, Any]:
    """A ClientMount of directive ``index`` on ``node``, asked to mount ``paths``, named and
    labelled as nnf's access controller makes it."""
    return {
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
                    "mountPath": path,
                    "type": "none" if fs_type == "raw" else fs_type,
                    "targetType": "file" if fs_type == "raw" else "directory",
                }
                for path in paths
            ],
        },
    }


def drive_mounts(ctx: Context, index: int, d: Directive, desired: str) -> None:
    """Drive the ClientMounts of directive ``index`` to ``desired`` and wait for them."""
    computes = ctx.dws.get("computes", ctx.name).get("data") or []
    nodes = [c["name"] for c in computes]
    existing = {m["metadata"]["namespace"]: m for m in mounts_of(ctx, index)}
    name = f"default-{ctx.name}-{index}-computes"
    fs_type = fs_type_of(ctx, d)
    missing = desired == "mounted" and any(n not in existing for n in nodes)
    wanted = allocations_per_compute(ctx, index, d, nodes) if missing else {}
    for node in nodes:
        if node not in existing:
            if desired != "mounted":
                continue
            paths = [ctx.mount_path(index)] * wanted.get(node, 0)
            body = clientmount_body(ctx, index, name, node, fs_type, paths)
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
                spec = existing[node]["spec"] if node in existing else {}
                count = len(spec.get("mounts") or []) if spec else wanted.get(node, 0)
                ready = [{"state": desired, "ready": True}] * count
                ctx.dws.patch(
                    "clientmounts",
                    name,
                    {"status": {"allReady": True, "mounts": ready}},
                    namespace=node,
                    status=True,
                )
    drive_rabbit_mounts(ctx, index, d, desired)
    pending = [
        m["metadata"]["namespace"]
        for m in mounts_of(ctx, index)
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


#: The file systems for which nnf also mounts the storage on the rabbits themselves
#: (nnf-sos ``preRunState``: an NnfAccess for the servers, target ``all``).
RABBIT_MOUNTED = ("gfs2", "lustre", "raw")


def drive_rabbit_mounts(ctx: Context, index: int, d: Directive, desired: str) -> None:
    """The rabbits' own ClientMounts of directive ``index`` (``default-<wf>-<i>-servers``,
    in each rabbit's namespace) for gfs2, lustre and raw, as nnf makes them in PreRun: each
    rabbit mounts every allocation it holds. The driver plays each rabbit's
    nnf-node-manager, except a rabbit in ``faults.never_mount`` (its daemon down: its
    ClientMount gets no status). In PostRun nnf deletes the servers' access (its
    ClientMounts unmounted and gone) unless the rabbit is in ``faults.never_unmount``."""
    fs_type = fs_type_of(ctx, d)
    if fs_type not in RABBIT_MOUNTED:
        return
    name = f"default-{ctx.name}-{index}-servers"
    held = held_per_rabbit(ctx, index, d)
    existing = {
        m["metadata"]["namespace"]: m
        for m in mounts_of(ctx, index)
        if m["metadata"]["name"].endswith("-servers")
    }
    if desired == "unmounted":
        delete_clientmounts(
            ctx.dws, [m for r, m in existing.items() if r not in ctx.faults.never_unmount]
        )
        return
    for rabbit, count in held.items():
        if rabbit not in existing:
            paths = [f"{ctx.mount_path(index)}/{rabbit}-{n}" for n in range(count)]
            body = clientmount_body(ctx, index, name, rabbit, fs_type, paths)
            with suppress(AlreadyExists):
                ctx.dws.create("clientmounts", body, namespace=rabbit)
        if rabbit not in ctx.faults.never_mount and not (existing.get(rabbit) or {}).get("status"):
            status = {"allReady": True, "mounts": [{"state": "mounted", "ready": True}] * count}
            ctx.dws.patch("clientmounts", name, {"status": status}, namespace=rabbit, status=True)

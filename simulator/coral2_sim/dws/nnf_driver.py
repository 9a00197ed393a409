"""The simulated nnf driver: what NNF does for each directive in each state.

:func:`work` is called by the DWS controller for one driver entry of the
current state and returns the entry's new fields. It talks to the API
server only through the DWS client, creating and checking the children
(DirectiveBreakdowns, Servers, PersistentStorageInstances, ClientMounts)
the way nnf does, and renders faults in the formats DWS reports them in.
"""

from __future__ import annotations

import time
from contextlib import suppress
from typing import Any

from coral2_sim.dws.nnf_capacity import refresh_free
from coral2_sim.dws.nnf_context import (
    Context,
    DriverFault,
    Failed,
    Faults,
    Waiting,
    error_fields,
    micro_time,
    parse_all,
)
from coral2_sim.dws.nnf_datamovement import (
    delete_datamovements,
    run_datamovement,
    wait_for_offloads,
)
from coral2_sim.dws.nnf_mounts import drive_mounts, release_mounts
from coral2_sim.dws.nnf_persistent import (
    lock_storage,
    owner_of,
    ran_through,
    release_ownership,
    unlock_storage,
)
from coral2_sim.dws.nnf_proposal import proposal
from pipeline.errors import NotFound
from pipeline.model.directives import (
    Copy,
    CreatePersistent,
    DestroyPersistent,
    Directive,
    JobDW,
    PersistentDW,
)


def progress(state: str, d: Directive | None) -> str | None:
    """The message nnf's workflow controller leaves on a directive's driver entry on its
    first pass of a state, before it requeues (``nnf_workflow_controller.go``): "status
    pending" while the DirectiveBreakdown is made, "allocation set not ready" while the
    NnfStorage is made, "delete" while a job's NnfAccess and data movements go."""
    if state == "Proposal" and isinstance(d, JobDW | CreatePersistent | PersistentDW):
        return "status pending"
    if state == "Setup" and isinstance(d, JobDW | CreatePersistent):
        return "allocation set not ready"
    if state == "Teardown" and isinstance(d, JobDW):
        return "delete"
    return None


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
    _check_mgt(ctx, servers_name, given)
    slow = ctx.faults.slow_rabbits

    def held(size: int, rabbit: str) -> dict[str, Any]:
        up = rabbit not in slow
        return {"allocationSize": size if up else 0, "ready": up}

    sets = [
        {
            "label": s["label"],
            "storage": {
                e["name"]: held(s["allocationSize"], e["name"]) for e in s.get("storage") or []
            },
        }
        for s in given
    ]
    ready = not any(rabbit in slow for rabbit in used)
    ctx.dws.patch(
        "servers", servers_name, {"status": {"ready": ready, "allocationSets": sets}}, status=True
    )
    refresh_free(ctx.dws, [r for r in used if r not in slow], [servers_name])
    if not ready:
        raise Waiting("pending storage")
    if isinstance(d, CreatePersistent):  # its storage is ready: the instance is usable
        ctx.dws.patch(
            "persistentstorageinstances", d.name, {"status": {"state": "Active"}}, status=True
        )


#: The allocation sets that make a Lustre MGT.
MGT_LABELS = ("mgt", "mgtmdt")


def lnet_nid(rabbit: str) -> str:
    """The rabbit's LNet address, as its NnfNode's ``status.lnetNid`` gives it (one per
    rabbit on real hardware)."""
    return f"{rabbit}@tcp"


def _check_mgt(ctx: Context, servers_name: str, given: list[dict[str, Any]]) -> None:
    """nnf-sos makes an NnfLustreMGT at the MGT rabbit's LNet address for each file
    system's MGT, and a second file system whose MGT is at the same address fails its
    Setup Fatal: "could not get available fsname: could not get NnfLustreMGT for address:
    …: multiple MGTs found for address …", the Workflow saying "could not allocate
    storage" (``nnf_storage_controller.go``, ``getLustreMgt``). An MGT is held from its
    storage's allocation in Setup until Teardown frees it."""
    mine = {e["name"] for s in given if s["label"] in MGT_LABELS for e in s.get("storage") or []}
    if not mine:
        return
    for other in ctx.dws.list_objects("servers")[0]:
        if other["metadata"]["name"] == servers_name:
            continue
        for aset in (other.get("status") or {}).get("allocationSets") or []:
            if aset.get("label") not in MGT_LABELS:
                continue
            for rabbit, held in (aset.get("storage") or {}).items():
                if rabbit in mine and int(held.get("allocationSize") or 0) > 0:
                    nid = lnet_nid(rabbit)
                    raise Failed(
                        "Fatal",
                        "WLM",
                        "could not allocate storage",
                        "could not get available fsname: could not get NnfLustreMGT for "
                        f"address: {nid}: multiple MGTs found for address {nid}",
                    )


def servers_pending(ctx: Context, index: int, d: JobDW | CreatePersistent) -> None:
    """As nnf-sos's Servers controller does once ``spec.allocationSets`` is filled: a status
    of one ``{allocationSize: 0, ready: false}`` entry per rabbit, written once, before the
    storage comes up (``dws_servers_controller.go``, ``statusSetEmpty``)."""
    name = d.name if isinstance(d, CreatePersistent) else f"{ctx.name}-{index}"
    try:
        servers = ctx.dws.get("servers", name)
    except NotFound:
        return
    given = (servers.get("spec") or {}).get("allocationSets") or []
    if not given or (servers.get("status") or {}).get("allocationSets"):
        return
    sets = [
        {
            "label": s["label"],
            "storage": {
                e["name"]: {"allocationSize": 0, "ready": False} for e in s.get("storage") or []
            },
        }
        for s in given
    ]
    ctx.dws.patch(
        "servers", name, {"status": {"ready": False, "allocationSets": sets}}, status=True
    )


def _setup(ctx: Context, index: int, d: Directive) -> None:
    if isinstance(d, JobDW | CreatePersistent):
        _check_servers(ctx, index, d)
    elif isinstance(d, PersistentDW):
        psi = ctx.dws.get("persistentstorageinstances", d.name)
        if (psi.get("status") or {}).get("state") != "Active":
            raise Failed("Fatal", "User", "PersistentStorage is not active")
        refs = psi["spec"].get("consumerReferences") or []
        ref = {"kind": "Workflow", "name": f"{ctx.name}-{index}", "namespace": ctx.dws.namespace}
        if ref not in refs:
            ctx.dws.patch(
                "persistentstorageinstances", d.name, {"spec": {"consumerReferences": [*refs, ref]}}
            )


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


def _lock(ctx: Context, d: PersistentDW) -> None:
    """An xfs persistent instance is mounted by one job at a time: nnf-sos's access
    controller locks its NnfStorage (``lockStorage``, ``nnf_access_controller.go``) and an
    access that finds it locked waits, so the job waits in PreRun until the holder's
    computes unmount it (PostRun). Its access is not ready, and makes no ClientMount
    until it holds the lock: the Workflow says "pending mount", as for any mount."""
    try:
        mine = lock_storage(ctx.dws, d.name, ctx.name)
    except NotFound:
        return  # gone: mounting it fails on its own
    if not mine:
        raise Waiting("pending mount")


def _teardown(ctx: Context, index: int, d: Directive) -> None:
    release_mounts(ctx, index)
    if isinstance(d, PersistentDW):  # a job that skipped PostRun lets it go here
        unlock_storage(ctx.dws, d.name, ctx.name)
    if isinstance(d, CreatePersistent) and ran_through(ctx):
        release_ownership(ctx.dws, d.name)
    if isinstance(d, Copy):
        delete_datamovements(ctx)
    if isinstance(d, DestroyPersistent):
        with suppress(NotFound):
            psi = ctx.dws.get("persistentstorageinstances", d.name)
            userid = int(ctx.workflow["spec"].get("userID", 0))
            if owner_of(psi) != userid:  # no ignore-uid here, as nnf's finishTeardownState
                raise Failed("Fatal", "User", "user ID does not match existing persistent storage")
            if psi.get("spec", {}).get("consumerReferences"):
                raise Failed("Fatal", "User", "persistent storage cannot be deleted while in use")
            ctx.dws.delete("persistentstorageinstances", d.name)
            # the instance's controller deletes its children with it (DeleteChildren of
            # getChildObjects: its NnfStorage, its Servers, its pinned profile); the
            # rabbits' free space then counts its allocations free again, as nnf-sos's
            # NnfNode capacity does
            with suppress(NotFound):
                held = ctx.dws.get("servers", d.name)
                sets = (held.get("status") or {}).get("allocationSets") or []
                ctx.dws.delete("servers", d.name)
                rabbits = [r for s in sets for r in (s.get("storage") or {})]
                refresh_free(ctx.dws, rabbits, [d.name])
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
            rabbits = [r for s in emptied for r in s["storage"]]
            refresh_free(ctx.dws, rabbits, [f"{ctx.name}-{index}"])


def work(ctx: Context, entry: dict[str, Any], latency_s: float) -> dict[str, Any] | None:
    """Advance one driver entry of the current state; return its new fields, or None for later."""
    state, index = entry["watchState"], int(entry["dwdIndex"])
    elapsed = time.monotonic() - ctx.state_started
    d_at = ctx.directives[index] if index < len(ctx.directives) else None
    if state == "Setup" and isinstance(d_at, JobDW | CreatePersistent):
        servers_pending(ctx, index, d_at)  # whatever else the pass does, hung or not
    chance = ctx.faults.at_random
    struck = [] if chance is None else [chance.fault_for(ctx.name)]
    for fault in [*ctx.faults.errors, *(f for f in struck if f is not None)]:
        if (fault.state, fault.index) == (state, index) and (
            fault.seconds is None or elapsed < fault.seconds
        ):
            return error_fields(fault.severity, fault.type, fault.message)
    if state in ctx.faults.hang_states:
        return {"status": "Running", "message": "hang (injected)"}
    first = progress(state, d_at)
    if first is not None and not entry.get("message"):  # seen before it goes on
        return {"status": "Running", "message": first, "completed": False}
    if elapsed < latency_s:
        return None
    d = ctx.directives[index] if index < len(ctx.directives) else None
    if d is None:
        return error_fields("Fatal", "Internal", "directive could not be parsed")
    try:
        if state == "Proposal":
            proposal(ctx, index, d)
        elif state == "Setup":
            _setup(ctx, index, d)
        elif state in ("PreRun", "PostRun") and isinstance(d, JobDW | PersistentDW):
            if state == "PreRun" and isinstance(d, PersistentDW):
                _lock(ctx, d)
            drive_mounts(ctx, index, d, "mounted" if state == "PreRun" else "unmounted")
            if state == "PostRun":
                if isinstance(d, PersistentDW):  # its computes unmounted: the next may mount
                    unlock_storage(ctx.dws, d.name, ctx.name)
                wait_for_offloads(ctx)
        elif state == "Teardown":
            _teardown(ctx, index, d)
        elif (
            state in ("DataIn", "DataOut")
            and isinstance(d, Copy)
            and (d.command == "copy_in") == (state == "DataIn")
        ):
            run_datamovement(ctx, index, d)
    except Failed as exc:
        return error_fields(exc.severity, exc.kind, exc.message, exc.debug)
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
    "Context",
    "DriverFault",
    "Failed",
    "Faults",
    "Waiting",
    "env_for",
    "error_fields",
    "micro_time",
    "parse_all",
    "work",
]

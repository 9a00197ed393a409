"""Persistent storage as nnf-sos keeps it: an instance's owner and its ``ignore-uid``
annotation (``validatePersistentInstanceDirective``), the creating breakdown's ownership
until its Teardown releases it (``finishTeardownState``), and an instance whose creation
never completed deleted with its Workflow, with its Servers."""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from coral2_sim.dws.nnf_context import Context
from pipeline.clients.k8s import DwsClient
from pipeline.errors import Conflict, NotFound
from pipeline.perform.reads import IGNORE_UID

#: The owner labels dws puts on a child object (``AddOwnerLabels``): a persistent storage
#: instance is its creating breakdown's until that job's Teardown releases it.
OWNER_NAME = "dataworkflowservices.github.io/owner.name"
OWNER_KIND = "dataworkflowservices.github.io/owner.kind"


def ignores_uid(psi: dict[str, Any]) -> bool:
    """Whether the instance is shared with every user (its ignore-uid annotation)."""
    annotations = (psi.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(IGNORE_UID, "")).lower() == "true"


def owner_of(psi: dict[str, Any]) -> int:
    """The user id that owns a persistent storage instance."""
    return int((psi.get("spec") or {}).get("userID", -1))


def ran_through(ctx: Context) -> bool:
    """Whether every driver entry outside Teardown completed (nnf's finishTeardownState of a
    create_persistent: only then does the instance outlive its creating job)."""
    drivers = (ctx.workflow.get("status") or {}).get("drivers") or []
    return all(e.get("completed") for e in drivers if e.get("watchState") != "Teardown")


def release_ownership(dws: DwsClient, name: str) -> None:
    """The creating job's Teardown lets its persistent storage instance go (owner labels off)."""
    with suppress(NotFound):
        psi = dws.get("persistentstorageinstances", name)
        labels = dict((psi.get("metadata") or {}).get("labels") or {})
        if OWNER_NAME in labels:
            dws.patch(
                "persistentstorageinstances",
                name,
                {"metadata": {"labels": {OWNER_NAME: None, OWNER_KIND: None}}},
            )


def delete_owned(dws: DwsClient, workflow: str, index: int, name: str) -> None:
    """Delete the persistent storage instance ``name`` (and its Servers) if directive
    ``index`` of ``workflow`` still owns it: a create_persistent whose job never completed
    takes its instance with it, as Kubernetes collects nnf's owned children."""
    with suppress(NotFound):
        psi = dws.get("persistentstorageinstances", name)
        if ((psi.get("metadata") or {}).get("labels") or {}).get(
            OWNER_NAME
        ) == f"{workflow}-{index}":
            dws.delete("persistentstorageinstances", name)
            with suppress(NotFound):
                dws.delete("servers", name)


#: The annotation nnf's access controller locks an xfs file system with, on its NnfStorage
#: (``lockStorage``): the NnfAccess that mounts it. The simulator has no NnfStorage, so it
#: keeps the lock on the persistent instance, naming the Workflow.
ACCESS_LOCK = "nnf.cray.hpe.com/access"


def lock_storage(dws: DwsClient, name: str, holder: str) -> bool:
    """Take persistent instance ``name``'s lock for Workflow ``holder``, as nnf-sos's
    ``lockStorage`` does for a non-clustered (xfs) file system: one access at a time, the
    next waits in PreRun until the first unmounts. Returns whether ``holder`` holds it."""
    psi = dws.get("persistentstorageinstances", name)
    if str((psi.get("spec") or {}).get("fsType")) != "xfs":
        return True  # clustered, or raw: no lock
    meta = psi.get("metadata") or {}
    held = (meta.get("annotations") or {}).get(ACCESS_LOCK)
    if held == holder:
        return True
    if held:
        return False
    body = {
        "metadata": {
            "annotations": {ACCESS_LOCK: holder},
            "resourceVersion": meta.get("resourceVersion"),
        }
    }
    try:
        dws.patch("persistentstorageinstances", name, body)
    except Conflict:
        return False  # another took it first: the next pass looks again
    return True


def unlock_storage(dws: DwsClient, name: str, holder: str) -> None:
    """Let persistent instance ``name``'s lock go, if ``holder`` holds it (``unlockStorage``,
    once its computes unmounted)."""
    with suppress(NotFound):
        psi = dws.get("persistentstorageinstances", name)
        if ((psi.get("metadata") or {}).get("annotations") or {}).get(ACCESS_LOCK) == holder:
            dws.patch(
                "persistentstorageinstances",
                name,
                {"metadata": {"annotations": {ACCESS_LOCK: None}}},
            )

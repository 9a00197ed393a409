"""Data movement as nnf-sos does it: the global Lustre check of a copy's paths in
Proposal, NnfDataMovements in DataIn and DataOut, and PostRun's wait for the copy-offload
movements a job started.

* Proposal (``validateStagingDirective``): a copy path that is neither ``$DW_JOB_…`` nor
  ``$DW_PERSISTENT_…`` must lie under the ``spec.mountRoot`` of a LustreFileSystem
  (``findLustreFileSystemForPath``), else a Fatal user error, on directive 0 as every
  whole-workflow check is.
* DataIn/DataOut (``startDataInOutState``): an xfs or gfs2 allocation moves its data on
  each rabbit, so one NnfDataMovement per allocation, ``<workflow>-<index>-<n>`` in the
  rabbit's namespace; a lustre (or persistent) one is a single ``<workflow>-<index>`` in
  ``nnf-dm-system``. Each carries the Workflow's and owner's labels, the state it belongs
  to (``nnf.cray.hpe.com/teardown_state``), the directive index and the job id.
  ``finishDataInOutState`` waits until every one is ``Finished``, then fails the entry
  Fatal when one did not succeed, quoting its message.
* PostRun (``startPostRunState``/``finishPostRunState``): movements labelled for PostRun —
  the copy-offload requests a job's user made while it ran — are waited for, and a failed
  one fails the entry.

The simulated nnf-dm finishes a movement at once, successfully unless one of its paths
lies under a prefix of ``faults.failed_copies``; its failure message is the simulator's
own (nnf-dm's words are not in nnf-sos).
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from kubernetes.client.exceptions import ApiException

from coral2_sim.dws.nnf_context import Context, Failed, Waiting
from coral2_sim.dws.nnf_mounts import held_per_rabbit
from coral2_sim.kube.resources import LUS
from pipeline.clients.k8s import NNF_GROUP, NNF_VERSIONS, WORKFLOW_LABEL
from pipeline.model.directives import Copy, Directive, JobDW

DM_NAMESPACE = "nnf-dm-system"
TEARDOWN_STATE = "nnf.cray.hpe.com/teardown_state"
INITIATOR = "dm.cray.hpe.com/initiator"
DIRECTIVE_INDEX = "nnf.cray.hpe.com/directive_index"
JOB_ID = "nnf.cray.hpe.com/job_id"
OWNER_KIND = "dataworkflowservices.github.io/owner.kind"
OWNER_NAME = "dataworkflowservices.github.io/owner.name"
OWNER_NAMESPACE = "dataworkflowservices.github.io/owner.namespace"


def _var(path: str, prefix: str) -> str | None:
    """The storage name ``$DW_JOB_<name>``/``$DW_PERSISTENT_<name>`` names (``_`` as ``-``)."""
    if not path.startswith(prefix):
        return None
    return path[len(prefix) :].split("/", 1)[0].replace("_", "-")


def lustre_roots(ctx: Context) -> list[str]:
    """Every LustreFileSystem's ``spec.mountRoot``, in every namespace."""
    found: Any = ctx.dws.custom.list_cluster_custom_object(LUS, "v1beta1", "lustrefilesystems")
    return [str((item.get("spec") or {}).get("mountRoot") or "") for item in found["items"]]


def check_global_paths(ctx: Context) -> None:
    """Refuse a copy whose global path lies on no LustreFileSystem, as Proposal does."""
    roots: list[str] | None = None
    for d in ctx.directives:
        if not isinstance(d, Copy):
            continue
        for which, path in (("source", d.source), ("destination", d.destination)):
            if path.startswith(("$DW_JOB_", "$DW_PERSISTENT_")):
                continue
            roots = lustre_roots(ctx) if roots is None else roots
            if not any(root and path.startswith(root) for root in roots):
                text = f"global Lustre file system containing '{path}' not found"
                debug = f"Invalid {which} argument: '{path}': {text}"
                raise Failed("Fatal", "User", text, debug=debug)


def _labels(ctx: Context, state: str, index: int, initiator: str) -> dict[str, str]:
    meta = ctx.workflow["metadata"]
    spec = ctx.workflow.get("spec") or {}
    return {
        WORKFLOW_LABEL: ctx.name,
        "dataworkflowservices.github.io/workflow.namespace": ctx.dws.namespace,
        OWNER_KIND: "Workflow",
        OWNER_NAME: ctx.name,
        OWNER_NAMESPACE: str(meta.get("namespace") or ctx.dws.namespace),
        TEARDOWN_STATE: state,
        INITIATOR: initiator,
        DIRECTIVE_INDEX: str(index),
        JOB_ID: str(spec.get("jobID", "")),
    }


def movement_body(
    ctx: Context, name: str, namespace: str, labels: dict[str, str], source: str, dest: str
) -> dict[str, Any]:
    """An NnfDataMovement."""
    spec = ctx.workflow.get("spec") or {}
    return {
        "apiVersion": f"{NNF_GROUP}/{NNF_VERSIONS[0]}",
        "kind": "NnfDataMovement",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "source": {"path": source},
            "destination": {"path": dest},
            "userId": int(spec.get("userID", 0)),
            "groupId": int(spec.get("groupID", 0)),
        },
    }


def _target(ctx: Context, d: Copy) -> tuple[int, Directive] | None:
    """The job storage on the rabbits a copy reads or writes (copy_in: its destination)."""
    path = d.destination if d.command == "copy_in" else d.source
    name = _var(path, "$DW_JOB_")
    for index, other in enumerate(ctx.directives):
        if isinstance(other, JobDW) and other.name == name:
            return index, other
    return None


def _places(ctx: Context, index: int, d: Copy) -> list[tuple[str, str]]:
    """(name, namespace) of each movement of copy directive ``index``."""
    target = _target(ctx, d)
    base = f"{ctx.name}-{index}"
    if (
        target is None
        or not isinstance(target[1], JobDW)
        or target[1].fs_type
        not in (
            "xfs",
            "gfs2",
        )
    ):
        return [(base, DM_NAMESPACE)]
    held = held_per_rabbit(ctx, *target)
    return [(f"{base}-{n}", rabbit) for rabbit, count in held.items() for n in range(count)]


def _create(ctx: Context, body: dict[str, Any]) -> None:
    with suppress(ApiException):  # 409: made by an earlier pass
        ctx.dws.custom.create_namespaced_custom_object(
            NNF_GROUP, NNF_VERSIONS[0], body["metadata"]["namespace"], "nnfdatamovements", body
        )


def _finish(ctx: Context, name: str, namespace: str, source: str, dest: str) -> None:
    """The simulated nnf-dm: the copy runs and ends at once."""
    failing = next(
        (p for p in ctx.faults.failed_copies if source.startswith(p) or dest.startswith(p)),
        None,
    )
    if failing is None:
        status = {"state": "Finished", "status": "Success", "message": ""}
    else:
        message = f"simulated nnf-dm: copying '{source}' to '{dest}' failed (fault {failing})"
        status = {"state": "Finished", "status": "Failed", "message": message}
    ctx.dws.custom.patch_namespaced_custom_object_status(
        NNF_GROUP, NNF_VERSIONS[0], namespace, "nnfdatamovements", name, {"status": status}
    )


def listed(ctx: Context, **labels: str) -> list[dict[str, Any]]:
    """The Workflow's movements carrying ``labels`` (every namespace)."""
    selector = ",".join(
        f"{k}={v}" for k, v in {OWNER_KIND: "Workflow", OWNER_NAME: ctx.name, **labels}.items()
    )
    found: Any = ctx.dws.custom.list_cluster_custom_object(
        NNF_GROUP, NNF_VERSIONS[0], "nnfdatamovements", label_selector=selector
    )
    return list(found["items"])


def run_datamovement(ctx: Context, index: int, d: Copy) -> None:
    """DataIn/DataOut of copy directive ``index``: make its movements (once), let them run,
    and end the entry as ``finishDataInOutState`` does."""
    state = str((ctx.workflow.get("status") or {}).get("state"))
    labels = _labels(ctx, state, index, d.command)
    for name, namespace in _places(ctx, index, d):
        _create(ctx, movement_body(ctx, name, namespace, labels, d.source, d.destination))
        _finish(ctx, name, namespace, d.source, d.destination)
    movements = listed(ctx, **{DIRECTIVE_INDEX: str(index), TEARDOWN_STATE: state})
    if not movements:
        raise Waiting("pending data movement")
    for dm in movements:
        if (dm.get("status") or {}).get("state") != "Finished":
            raise Waiting("pending data movement")
    for dm in movements:
        status = dm.get("status") or {}
        if status.get("status") != "Success":
            raise Failed(
                "Fatal",
                "Internal",
                f"data movement operation failed during '{state}', "
                f"message: {status.get('message', '')}",
            )


def wait_for_offloads(ctx: Context) -> None:
    """PostRun: wait for the movements labelled for PostRun (copy-offload requests made
    while the job ran); fail the entry when one failed."""
    for dm in listed(ctx, **{TEARDOWN_STATE: "PostRun"}):
        status = dm.get("status") or {}
        if status.get("state") != "Finished":
            raise Waiting("pending data movement")
        if status.get("status") == "Failed":
            meta = dm["metadata"]
            raise Failed(
                "Fatal",
                "Internal",
                "data movement failed",
                debug=f"data movement {meta['namespace']}/{meta['name']} failed",
            )


def delete_datamovements(ctx: Context) -> None:
    """Teardown: delete the Workflow's NnfDataMovements."""
    for item in ctx.dws.datamovements(ctx.name, 1000):
        with suppress(ApiException):
            ctx.dws.custom.delete_namespaced_custom_object(
                NNF_GROUP,
                NNF_VERSIONS[0],
                item["metadata"]["namespace"],
                "nnfdatamovements",
                item["metadata"]["name"],
            )


__all__ = [
    "DM_NAMESPACE",
    "check_global_paths",
    "delete_datamovements",
    "lustre_roots",
    "run_datamovement",
    "wait_for_offloads",
]

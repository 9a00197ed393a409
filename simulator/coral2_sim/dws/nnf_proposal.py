"""Proposal as nnf-sos runs it for each directive: the workflow-wide checks, the daemons
a directive requires, the storage profile it names, persistent storage's owner, and the
DirectiveBreakdown it gets (``startProposalState``, ``validateWorkflow``)."""

from __future__ import annotations

from contextlib import suppress

from kubernetes.client.exceptions import ApiException

from coral2_sim.dws.fixtures import PROFILE_NAMESPACE
from coral2_sim.dws.nnf_context import (
    Context,
    Failed,
)
from coral2_sim.dws.nnf_datamovement import (
    check_global_paths,
)
from coral2_sim.dws.nnf_persistent import (
    OWNER_KIND,
    OWNER_NAME,
    ignores_uid,
    owner_of,
)
from coral2_sim.kube.resources import NNF
from pipeline.clients.k8s import WORKFLOW_LABEL
from pipeline.errors import AlreadyExists, NotFound
from pipeline.model.directives import (
    CreatePersistent,
    Directive,
    JobDW,
    PersistentDW,
    check_workflow,
)
from pipeline.model.nnf import breakdown_for

#: The Secret a site makes for user containers' TLS (nnf-sos's
#: ``userContainerTLSSecretName``, in ``default``); ``requires=`` needs it.
USER_CONTAINER_TLS = "nnf-dm-usercontainer-server-tls"


def _requires(ctx: Context, daemons: tuple[str, ...]) -> None:
    """``requires=`` of a jobdw, persistentdw or create_persistent, as nnf-sos's
    ``intepretRequiresKeyword``: ``copy-offload`` adds itself and ``container-auth`` to
    ``status.requires``, ``user-container-auth`` adds ``container-auth``; either needs the
    site's user container TLS Secret. (The Workflow's token is made in Setup only for a
    ``container`` directive, ``setupContainerAuth``.)"""
    words = {
        "copy-offload": ["copy-offload", "container-auth"],
        "user-container-auth": ["container-auth"],
    }
    found = [w for daemon in daemons for w in words.get(daemon, [])]
    if not found:
        return
    status = ctx.workflow.setdefault("status", {})
    status["requires"] = list(dict.fromkeys([*(status.get("requires") or []), *found]))
    try:
        ctx.dws.core.read_namespaced_secret(USER_CONTAINER_TLS, "default")
    except ApiException as exc:
        debug = (
            "the administrator must configure the user container TLS secret for the system. "
            f'See the copy-offload docs: secrets "{USER_CONTAINER_TLS}" not found'
        )
        if exc.status != 404:
            raise
        raise Failed("Fatal", "Internal", "", debug=debug) from None


def _profile(ctx: Context, name: str) -> None:
    """A directive's ``profile=`` must name an NnfStorageProfile, as nnf-sos's
    ``findProfileToUse`` (``nnfstorageprofile_helpers.go``) requires: else a Fatal user
    error in Proposal."""
    try:
        ctx.dws.custom.get_namespaced_custom_object(
            NNF, "v1alpha11", PROFILE_NAMESPACE, "nnfstorageprofiles", name
        )
    except ApiException as exc:
        if exc.status != 404:
            raise
        raise Failed("Fatal", "User", f"Unable to find NnfStorageProfile: {name}") from None


def proposal(ctx: Context, index: int, d: Directive) -> None:
    problem = check_workflow([x for x in ctx.directives if x is not None])
    if problem is not None:
        where, _, text = problem.partition(": ")
        failing = int(where.split()[-1])
        if failing == index:
            raise Failed("Fatal", "User", text.removeprefix("User error: "))
        return
    if index == 0:  # validateWorkflow, at the first entry: the global Lustre paths
        check_global_paths(ctx)
    if isinstance(d, JobDW | PersistentDW | CreatePersistent) and d.requires:
        _requires(ctx, d.requires)
    if isinstance(d, JobDW | CreatePersistent) and d.args.get("profile"):
        _profile(ctx, str(d.args["profile"]))
    spec = ctx.workflow["spec"]
    userid = int(spec.get("userID", 0))
    if isinstance(d, PersistentDW):
        try:
            psi = ctx.dws.get("persistentstorageinstances", d.name)
        except NotFound:
            raise Failed(
                "Fatal", "User", f"PersistentStorageInstance '{d.name}' not found"
            ) from None
        if (psi.get("metadata") or {}).get("deletionTimestamp"):
            raise Failed("Fatal", "User", f"Persistent storage instance '{d.name}' is deleting")
        if not ignores_uid(psi) and owner_of(psi) != userid:
            raise Failed("Fatal", "User", "User ID does not match existing persistent storage")
    if isinstance(d, CreatePersistent):
        with suppress(NotFound):
            psi = ctx.dws.get("persistentstorageinstances", d.name)
            if not ignores_uid(psi) and owner_of(psi) != userid:
                raise Failed("Fatal", "User", "User ID does not match existing persistent storage")
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
            "metadata": {
                "name": d.name,
                # owned by the breakdown until the creating job's Teardown lets it go
                "labels": {OWNER_NAME: f"{ctx.name}-{index}", OWNER_KIND: "DirectiveBreakdown"},
            },
            "spec": {
                "name": d.name,
                "fsType": d.fs_type,
                "dwDirective": d.line,
                "userID": userid,
                "state": "Active",
                "consumerReferences": [],
            },
        }
        with suppress(AlreadyExists):
            ctx.dws.create("persistentstorageinstances", psi)
            # Creating until the creating job's storage is ready (its Setup)
            ctx.dws.patch(
                "persistentstorageinstances",
                d.name,
                {"status": {"state": "Creating"}},
                status=True,
            )
        with suppress(AlreadyExists):
            ctx.dws.create("servers", {"metadata": {"name": d.name}, "spec": {}})

"""The DWS client: typed calls on DWS objects (plumbing in :mod:`pipeline.clients.kube`).

With ``kube`` and ``k8s_errors``, the only modules that import kubernetes. Every call
translates client errors into ``pipeline.errors``; calls that are safe to
repeat are retried on :class:`~pipeline.errors.Unavailable` with capped
exponential backoff for at most ``outage_budget_s``, then the error goes up
to the task, whose own retry takes over — never a tight loop.
"""

from __future__ import annotations

import base64
import functools
import threading
from collections.abc import Sequence
from typing import Any

from pipeline.clients.kube import DWS_VERSIONS, KubeClient, WatchEvent
from pipeline.clients.kube_auth import api_client
from pipeline.errors import ApiVersionNotFound, Conflict, Invalid, NotFound
from pipeline.model.workflow import DWS_GROUP, WLM_FINALIZER, WORKFLOW_LABEL

NNF_GROUP = "nnf.cray.hpe.com"
#: The NNF versions the pipeline reads (nnfdatamovements), newest first: nnf-sos serves
#: v1alpha11 and v1alpha10; older releases served v1alpha9 and v1alpha8.
NNF_VERSIONS = ("v1alpha11", "v1alpha10", "v1alpha9", "v1alpha8")


class DwsClient(KubeClient):
    """Typed access to the DWS custom resources of one namespace."""

    #: probe the served version before the first request (:meth:`probe_lazily`)
    _probe_first: bool = False
    _probe_from: str | None = None
    _probing: bool = False
    #: the NNF version spoken (None until :meth:`probe_nnf_version`)
    nnf_version: str | None = None

    def probe_lazily(self, configured: str | None = None) -> DwsClient:
        """Probe the served version (:meth:`probe_version`) just before the first request
        this client makes, not now: a process that never calls the API server never
        probes it. A probe that fails is made again before the next request; requests of
        other threads wait for it."""
        self._probe_first, self._probe_from = True, configured
        self._probe_lock = threading.RLock()
        return self

    def _before_first_call(self) -> None:
        if not self._probe_first:
            return
        with self._probe_lock:  # reentrant: the probe's own requests pass
            if not self._probe_first or self._probing:
                return
            self._probing = True
            try:
                self.probe_version(self._probe_from)
                self._probe_first = False
            finally:
                self._probing = False

    def probe_version(self, configured: str | None = None) -> str:
        """Speak the newest DWS version the API server serves for storages, systemstatuses
        and systemconfigurations (``configured`` first), as flux-coral2's #445 probes.

        A version answered 404 is not served: the next is tried. Any other failure (the
        server unreachable or failing, this account refused) is raised as it is, so an
        outage is retried rather than taken for a missing version."""
        candidates = ([configured] if configured else []) + [
            v for v in DWS_VERSIONS if v != configured
        ]
        for version in candidates:
            try:
                for plural in ("storages", "systemstatuses", "systemconfigurations"):
                    self._call(
                        functools.partial(
                            self.custom.list_namespaced_custom_object,
                            DWS_GROUP,
                            version,
                            "default",
                            plural,
                            limit=2,
                            _request_timeout=self.request_timeout_s,
                        )
                    )
            except NotFound:
                continue
            self.version = version
            return version
        raise ApiVersionNotFound(
            f"could not find suitable API version for {DWS_GROUP} (out of {candidates}): "
            "the API server serves none of them for storages, systemstatuses and "
            "systemconfigurations; install a DWS release that serves one, or set "
            "rabbit.dws_api_version to one it serves"
        )

    # --- Workflows -------------------------------------------------------------
    def create_workflow(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create a Workflow; raises AlreadyExists if it exists (a retried create is done)."""
        return self.create("workflows", body)

    def get_workflow(self, name: str) -> dict[str, Any]:
        """Get a Workflow."""
        return self.get("workflows", name)

    def patch_desired_state(
        self,
        name: str,
        desired: str,
        *,
        expected_state: str | None,
        attempts: int = 5,
        current: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """:meth:`move_desired_state`'s Workflow."""
        return self.move_desired_state(
            name, desired, expected_state=expected_state, attempts=attempts, current=current
        )[0]

    def move_desired_state(
        self,
        name: str,
        desired: str,
        *,
        expected_state: str | None,
        attempts: int = 5,
        current: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """Move ``desiredState`` to ``desired`` if ``status.state`` is ``expected_state``.

        ``expected_state=None`` accepts any state (Teardown may be asked from
        anywhere); otherwise ``desiredState`` must be ``expected_state`` too, so
        a Workflow asked for Teardown meanwhile is never moved back. The
        patch carries the resourceVersion read, so a concurrent change
        cannot make us act on stale state: on a resourceVersion
        conflict (DWS wrote the status meanwhile) the Workflow is read again
        and checked again, up to ``attempts`` times. A Workflow in another
        state raises Conflict; one already asking for ``desired`` is returned
        unchanged. Returns the Workflow and whether this call moved it.

        ``current``: the Workflow as just read (the copy the decision was made
        on); the first attempt starts from it instead of reading it again.
        Without it, one JSON Patch first tries the move, guarded by ``test``s
        that ``status.state`` and ``desiredState`` are both ``expected_state``
        (the API server applies all or nothing); only a Workflow found
        elsewhere costs the read.
        """
        if current is None and expected_state is not None:
            try:  # the common case in one request: both fields still at the expected state
                return self.json_patch("workflows", name, _move(expected_state, desired)), True
            except Invalid:
                pass  # elsewhere (or refused): read it, and decide as below
        known = current  # the copy the caller decided on: used once, read afresh after
        for attempt in range(attempts):
            current, known = known or self.get_workflow(name), None
            asked = current.get("spec", {}).get("desiredState")
            if asked == desired:
                return current, False
            state = current.get("status", {}).get("state", "")
            if expected_state is not None and state != expected_state:
                raise Conflict(
                    f"workflow {name} is in state {state!r}, not {expected_state!r}; "
                    f"not moving it to {desired}"
                )
            if expected_state is not None and asked != expected_state:
                raise Conflict(
                    f"workflow {name} is already asked for {asked!r}; not moving it to {desired}"
                )
            body = {
                "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                "spec": {"desiredState": desired},
            }
            try:
                return self.patch("workflows", name, body), True
            except Conflict:
                if attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def delete_workflow(self, name: str) -> bool:
        """Delete a Workflow; return False when it was already gone."""
        return self.delete("workflows", name)

    def remove_finalizer(
        self,
        name: str,
        finalizer: str = WLM_FINALIZER,
        *,
        current: dict[str, Any] | None = None,
    ) -> bool:
        """Remove ``finalizer`` from a Workflow; return whether it was there.

        ``current``: the Workflow as just read; if it turns out stale (a
        resourceVersion conflict) the Workflow is read again, once.
        """
        known = current
        while True:
            current = known or self.get_workflow(name)
            finalizers: Sequence[str] = current["metadata"].get("finalizers") or []
            if finalizer not in finalizers:
                return False
            body = {
                "metadata": {
                    "resourceVersion": current["metadata"]["resourceVersion"],
                    "finalizers": [f for f in finalizers if f != finalizer],
                }
            }
            try:
                self.patch("workflows", name, body)
            except Conflict:
                if known is None:
                    raise
                known = None
                continue
            return True

    # --- the other DWS resources ------------------------------------------------
    def directive_breakdowns(self, workflow: dict[str, Any]) -> list[dict[str, Any]]:
        """Fetch the DirectiveBreakdowns the Workflow's status references, in order."""
        refs = workflow.get("status", {}).get("directiveBreakdowns") or []
        return [self.get("directivebreakdowns", r["name"], r.get("namespace")) for r in refs]

    def patch_servers(
        self, name: str, allocation_sets: list[dict[str, Any]], *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Fill a Servers object's ``spec.allocationSets``."""
        return self.patch(
            "servers", name, {"spec": {"allocationSets": allocation_sets}}, namespace=namespace
        )

    def patch_computes(
        self, name: str, data: list[dict[str, str]], *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Fill a Computes object's ``data`` (``[{"name": host}, ...]``)."""
        return self.patch("computes", name, {"data": data}, namespace=namespace)

    def client_mounts(self, workflow_name: str) -> list[dict[str, Any]]:
        """List the ClientMounts of a Workflow (cluster-wide)."""
        items, _ = self.list_objects(
            "clientmounts", selector=f"{WORKFLOW_LABEL}={workflow_name}", all_namespaces=True
        )
        return items

    def storages(self) -> tuple[list[dict[str, Any]], str]:
        """List the Storage objects (one per rabbit)."""
        return self.list_objects("storages")

    def patch_storage(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """Merge-patch a Storage object."""
        return self.patch("storages", name, body)

    def patch_system_status(self, body: dict[str, Any], name: str = "default") -> dict[str, Any]:
        """Merge-patch the SystemStatus object."""
        return self.patch("systemstatuses", name, body)

    def probe_nnf_version(self) -> str:
        """Speak the newest NNF version the API server serves for nnfdatamovements, as
        :meth:`probe_version` does for DWS (a 404 is a version not served; any other
        failure is raised as it is). Kept for the client's life."""
        if self.nnf_version is not None:
            return self.nnf_version
        for version in NNF_VERSIONS:
            try:
                self._call(
                    functools.partial(
                        self.custom.list_cluster_custom_object,
                        NNF_GROUP,
                        version,
                        "nnfdatamovements",
                        limit=1,
                        _request_timeout=self.request_timeout_s,
                    )
                )
            except NotFound:
                continue
            self.nnf_version = version
            return version
        raise ApiVersionNotFound(
            f"could not find suitable API version for {NNF_GROUP} (out of "
            f"{list(NNF_VERSIONS)}): the API server serves none of them for "
            "nnfdatamovements; install an nnf-sos release that serves one"
        )

    def datamovements(self, workflow_name: str, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` NnfDataMovements of a Workflow, cluster-wide (flux-coral2's query),
        in the newest NNF version served (:meth:`probe_nnf_version`)."""
        selector = (
            f"{WORKFLOW_LABEL}={workflow_name},"
            f"dataworkflowservices.github.io/workflow.namespace={self.namespace}"
        )
        version = self.probe_nnf_version()
        result: dict[str, Any] = self._call(
            lambda: self.custom.list_cluster_custom_object(
                NNF_GROUP,
                version,
                "nnfdatamovements",
                label_selector=selector,
                limit=limit,
                _request_timeout=self.request_timeout_s,
            )
        )
        return list(result.get("items") or [])

    def workflow_token(self, workflow: dict[str, Any]) -> str | None:
        """Read the Workflow's token from its Secret (``DW_WORKFLOW_TOKEN``), if it has one."""
        ref = workflow.get("status", {}).get("workflowToken") or {}
        if not ref.get("secretName"):
            return None
        ns, name = ref.get("secretNamespace") or self.namespace, ref["secretName"]
        meta = workflow.get("metadata") or {}
        own = (meta.get("namespace") or self.namespace, f"{meta.get('name')}-token")
        if (ns, name) != own:
            # nnf-sos names a Workflow's token Secret <workflow>-token in the Workflow's
            # namespace (makeWorkflowTokenName); the account may read every Secret there,
            # so a status naming another one is never followed into a job's environment
            raise Invalid(
                f"Workflow {meta.get('name')}'s status.workflowToken names the Secret "
                f"{ns}/{name}, not {own[0]}/{own[1]} as DWS names a Workflow's token: "
                "not read"
            )
        secret = self._call(
            lambda: self.core.read_namespaced_secret(
                name, ns, _request_timeout=self.request_timeout_s
            )
        )
        token = (secret.data or {}).get("token")
        return base64.b64decode(token).decode() if token else None


def _move(expected: str, desired: str) -> list[dict[str, Any]]:
    """The JSON Patch moving ``desiredState`` from ``expected`` to ``desired`` only while
    ``status.state`` is ``expected`` too."""
    return [
        {"op": "test", "path": "/status/state", "value": expected},
        {"op": "test", "path": "/spec/desiredState", "value": expected},
        {"op": "replace", "path": "/spec/desiredState", "value": desired},
    ]


__all__ = [
    "DWS_GROUP",
    "DWS_VERSIONS",
    "NNF_GROUP",
    "NNF_VERSIONS",
    "WLM_FINALIZER",
    "WORKFLOW_LABEL",
    "DwsClient",
    "WatchEvent",
    "api_client",
]

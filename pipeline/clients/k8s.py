"""The DWS client: typed calls on DWS objects through the official ``kubernetes`` client.

The only module (with ``k8s_errors``) that imports kubernetes. Every call
translates client errors into ``pipeline.errors``; calls that are safe to
repeat are retried on :class:`~pipeline.errors.Unavailable` with capped
exponential backoff for at most ``outage_budget_s``, then the error goes up
to the task, whose own retry takes over — never a tight loop.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as Urllib3Error

from pipeline.clients.k8s_errors import translate
from pipeline.errors import ApiVersionNotFound, Conflict, Gone, KubeError, NotFound, Unavailable
from pipeline.model.workflow import DWS_GROUP, WLM_FINALIZER, WORKFLOW_LABEL

log = logging.getLogger("coral2_pipeline.k8s")

DWS_VERSIONS = ("v1alpha7", "v1alpha6")
NNF_GROUP = "nnf.cray.hpe.com"
NNF_VERSIONS = ("v1alpha11", "v1alpha10", "v1alpha9", "v1alpha8")


def api_client(*, host: str | None = None, kubeconfig: str | None = None) -> client.ApiClient:
    """Return an ApiClient for ``host`` (plain URL) or a kubeconfig (default locations if None)."""
    if host:
        return client.ApiClient(client.Configuration(host=host))
    api: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=kubeconfig
    )
    return api


@dataclass(frozen=True)
class WatchEvent:
    """One watch event: ``ADDED``, ``MODIFIED``, ``DELETED`` (``BOOKMARK`` is filtered)."""

    type: str
    object: dict[str, Any]

    @property
    def resource_version(self) -> str:
        """The object's resourceVersion."""
        return str(self.object.get("metadata", {}).get("resourceVersion", ""))


class DwsClient:
    """Typed access to the DWS custom resources of one namespace."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        namespace: str = "default",
        version: str | None = None,
        outage_budget_s: float = 10.0,
    ) -> None:
        self.api = api
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self.namespace = namespace
        self.version = version or DWS_VERSIONS[0]
        self.outage_budget_s = outage_budget_s

    # --- plumbing ------------------------------------------------------------
    def _call(self, fn: Callable[[], Any], *, retry: bool = True) -> Any:
        deadline = time.monotonic() + self.outage_budget_s
        delay = 0.05
        while True:
            try:
                return fn()
            except (ApiException, Urllib3Error, OSError) as exc:
                error = translate(exc)
            if (
                not (retry and isinstance(error, Unavailable))
                or time.monotonic() + delay > deadline
            ):
                raise error
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    def probe_version(self, configured: str | None = None) -> str:
        """Pick the first DWS version serving storages, systemstatuses and systemconfigurations."""
        candidates = ([configured] if configured else []) + [
            v for v in DWS_VERSIONS if v != configured
        ]
        for version in candidates:
            try:
                for plural in ("storages", "systemstatuses", "systemconfigurations"):
                    self.custom.list_namespaced_custom_object(
                        DWS_GROUP, version, "default", plural, limit=2
                    )
            except (ApiException, Urllib3Error, OSError):
                continue
            self.version = version
            return version
        raise ApiVersionNotFound(
            f"could not find suitable API version for {DWS_GROUP} (out of {candidates})"
        )

    # --- generic -------------------------------------------------------------
    def get(self, plural: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        """Get one object."""
        ns = namespace or self.namespace
        result: dict[str, Any] = self._call(
            lambda: self.custom.get_namespaced_custom_object(
                DWS_GROUP, self.version, ns, plural, name
            )
        )
        return result

    def create(
        self, plural: str, body: dict[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Create an object; raises AlreadyExists when it exists."""
        ns = namespace or self.namespace
        result: dict[str, Any] = self._call(
            lambda: self.custom.create_namespaced_custom_object(
                DWS_GROUP, self.version, ns, plural, body
            ),
            retry=False,
        )
        return result

    def replace(
        self, plural: str, name: str, body: dict[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        """PUT the whole object; its ``metadata.resourceVersion`` guards against lost updates."""
        ns = namespace or self.namespace
        result: dict[str, Any] = self._call(
            lambda: self.custom.replace_namespaced_custom_object(
                DWS_GROUP, self.version, ns, plural, name, body
            ),
            retry=False,
        )
        return result

    def delete(self, plural: str, name: str, *, namespace: str | None = None) -> bool:
        """Delete an object; return False when it was already gone."""
        ns = namespace or self.namespace
        try:
            self._call(
                lambda: self.custom.delete_namespaced_custom_object(
                    DWS_GROUP, self.version, ns, plural, name
                )
            )
        except NotFound:
            return False
        return True

    def patch(
        self,
        plural: str,
        name: str,
        body: Any,
        *,
        namespace: str | None = None,
        status: bool = False,
    ) -> dict[str, Any]:
        """Merge-patch one object (or its status subresource)."""
        ns = namespace or self.namespace
        fn = (
            self.custom.patch_namespaced_custom_object_status
            if status
            else self.custom.patch_namespaced_custom_object
        )
        result: dict[str, Any] = self._call(
            lambda: fn(DWS_GROUP, self.version, ns, plural, name, body)
        )
        return result

    def list_objects(
        self,
        plural: str,
        *,
        namespace: str | None = None,
        selector: str | None = None,
        all_namespaces: bool = False,
    ) -> tuple[list[dict[str, Any]], str]:
        """List objects; return them and the list's resourceVersion."""
        if all_namespaces:
            result: dict[str, Any] = self._call(
                lambda: self.custom.list_cluster_custom_object(
                    DWS_GROUP, self.version, plural, label_selector=selector or ""
                )
            )
        else:
            ns = namespace or self.namespace
            result = self._call(
                lambda: self.custom.list_namespaced_custom_object(
                    DWS_GROUP, self.version, ns, plural, label_selector=selector or ""
                )
            )
        return list(result.get("items", [])), str(result["metadata"]["resourceVersion"])

    def watch(
        self,
        plural: str,
        resource_version: str,
        *,
        timeout_s: int = 60,
        all_namespaces: bool = False,
    ) -> Iterator[WatchEvent]:
        """Yield events after ``resource_version`` until the server ends the stream.

        Raises :class:`~pipeline.errors.Gone` when the version is too old
        (relist), :class:`~pipeline.errors.Unavailable` when the stream breaks.
        """
        where: tuple[Any, ...] = (
            (self.custom.list_cluster_custom_object, DWS_GROUP, self.version)
            if all_namespaces
            else (
                self.custom.list_namespaced_custom_object,
                DWS_GROUP,
                self.version,
                self.namespace,
            )
        )
        stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
            *where,
            plural,
            resource_version=resource_version,
            timeout_seconds=timeout_s,
            allow_watch_bookmarks=True,
        )
        try:
            for event in stream:
                if event["type"] == "BOOKMARK":
                    continue
                if event["type"] == "ERROR":
                    raise translate(
                        ApiException(
                            status=event["raw_object"].get("code", 500), reason="watch error"
                        )
                    )
                yield WatchEvent(event["type"], event["object"])
        except (ApiException, Urllib3Error, OSError) as exc:
            raise translate(exc) from exc

    def follow(
        self,
        plural: str,
        on_event: Callable[[str, dict[str, Any]], None],
        stop: threading.Event,
        *,
        all_namespaces: bool = False,
    ) -> None:
        """List ``plural``, then watch it until ``stop`` is set, calling ``on_event(type, obj)``.

        Objects already there arrive as ``ADDED``. The watch resumes from the
        last resourceVersion, relists when that version is gone (410), and
        rides out API-server outages; for the controllers and agents that
        are not the pipeline's watcher (:mod:`pipeline.watch` keeps its
        version in Redis and elects a leader).
        """
        rv = ""
        while not stop.is_set():
            try:
                if not rv:
                    items, rv = self.list_objects(plural, all_namespaces=all_namespaces)
                    for item in items:
                        on_event("ADDED", item)
                for event in self.watch(plural, rv, timeout_s=1, all_namespaces=all_namespaces):
                    rv = event.resource_version
                    on_event(event.type, event.object)
                    if stop.is_set():
                        return
            except Gone:
                rv = ""
            except KubeError as exc:
                log.debug("%s watch: %s", plural, exc)
                time.sleep(0.2)

    # --- Workflows -------------------------------------------------------------
    def create_workflow(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create a Workflow; raises AlreadyExists if it exists (a retried create is done)."""
        ns = self.namespace
        result: dict[str, Any] = self._call(
            lambda: self.custom.create_namespaced_custom_object(
                DWS_GROUP, self.version, ns, "workflows", body
            ),
            retry=False,
        )
        return result

    def get_workflow(self, name: str) -> dict[str, Any]:
        """Get a Workflow."""
        return self.get("workflows", name)

    def patch_desired_state(
        self, name: str, desired: str, *, expected_state: str | None, attempts: int = 5
    ) -> dict[str, Any]:
        """Move ``desiredState`` to ``desired`` if ``status.state`` is ``expected_state``.

        ``expected_state=None`` accepts any state (Teardown may be asked from
        anywhere). The patch carries the resourceVersion read, so a concurrent
        change cannot make us act on stale state: on a resourceVersion
        conflict (DWS wrote the status meanwhile) the Workflow is read again
        and checked again, up to ``attempts`` times. A Workflow in another
        state raises Conflict; one already asking for ``desired`` is returned
        unchanged.
        """
        for attempt in range(attempts):
            current = self.get_workflow(name)
            if current.get("spec", {}).get("desiredState") == desired:
                return current
            state = current.get("status", {}).get("state", "")
            if expected_state is not None and state != expected_state:
                raise Conflict(
                    f"workflow {name} is in state {state!r}, not {expected_state!r}; "
                    f"not moving it to {desired}"
                )
            body = {
                "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                "spec": {"desiredState": desired},
            }
            try:
                return self.patch("workflows", name, body)
            except Conflict:
                if attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def delete_workflow(self, name: str) -> bool:
        """Delete a Workflow; return False when it was already gone."""
        return self.delete("workflows", name)

    def remove_finalizer(self, name: str, finalizer: str = WLM_FINALIZER) -> bool:
        """Remove ``finalizer`` from a Workflow; return whether it was there."""
        current = self.get_workflow(name)
        finalizers: Sequence[str] = current["metadata"].get("finalizers") or []
        if finalizer not in finalizers:
            return False
        body = {
            "metadata": {
                "resourceVersion": current["metadata"]["resourceVersion"],
                "finalizers": [f for f in finalizers if f != finalizer],
            }
        }
        self.patch("workflows", name, body)
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

    def datamovements(self, workflow_name: str, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` NnfDataMovements of a Workflow, cluster-wide (flux-coral2's query)."""
        selector = (
            f"{WORKFLOW_LABEL}={workflow_name},"
            f"dataworkflowservices.github.io/workflow.namespace={self.namespace}"
        )
        result: dict[str, Any] = self._call(
            lambda: self.custom.list_cluster_custom_object(
                NNF_GROUP, NNF_VERSIONS[0], "nnfdatamovements", label_selector=selector, limit=limit
            )
        )
        return list(result.get("items") or [])

    def workflow_token(self, workflow: dict[str, Any]) -> str | None:
        """Read the Workflow's token from its Secret (``DW_WORKFLOW_TOKEN``), if it has one."""
        ref = workflow.get("status", {}).get("workflowToken") or {}
        if not ref.get("secretName"):
            return None
        ns, name = ref.get("secretNamespace") or self.namespace, ref["secretName"]
        secret = self._call(lambda: self.core.read_namespaced_secret(name, ns))
        token = (secret.data or {}).get("token")
        return base64.b64decode(token).decode() if token else None


__all__ = [
    "DWS_GROUP",
    "DWS_VERSIONS",
    "WLM_FINALIZER",
    "WORKFLOW_LABEL",
    "DwsClient",
    "WatchEvent",
    "api_client",
]

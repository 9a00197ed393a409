"""Plumbing over the official ``kubernetes`` client: calls, errors, retries, watches.

With ``k8s_errors``, the only place that imports kubernetes. Every call
translates client errors into ``pipeline.errors``; calls that are safe to
repeat are retried on :class:`~pipeline.errors.Unavailable` with capped
exponential backoff for at most ``outage_budget_s``, then the error goes up
to the task, whose own retry takes over — never a tight loop. The typed DWS
calls are in :mod:`pipeline.clients.k8s`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as Urllib3Error

from pipeline.clients.k8s_errors import translate
from pipeline.errors import Gone, KubeError, NotFound, Unavailable
from pipeline.model.workflow import DWS_GROUP

log = logging.getLogger("coral2_pipeline.k8s")

DWS_VERSIONS = ("v1alpha7", "v1alpha6")

#: The longest one API call (not a watch) may take, connecting and reading (s). A call
#: that gets no answer in time counts as the API server being unreachable: retried
#: within the outage budget, then the task's own retry — never a thread held forever
#: (the threads pool enforces no task time limit).
REQUEST_TIMEOUT_S = 30.0
#: The longest one request of a one-shot command (``rabbitmapping``) may take: it is not
#: retried, and an API server that does not answer in time ends the command with exit 4.
ONE_SHOT_TIMEOUT_S = 10.0
#: Objects a list asks for at once (client-go's pager asks for 500): no answer holds all of
#: a whole machine's Workflows, and no server or client holds its lock for the lot.
LIST_PAGE = 500
#: Lists of one snapshot started before one holds (each expires only after minutes).
LIST_TRIES = 3


class _Watch(watch.Watch):
    """The official ``Watch``, minus two of its three JSON passes per event.

    For a custom resource it parses each event line, then serializes the
    object again and parses that to "deserialize" it into the dict it
    already was. With no return type, the first parse is the event (the
    ``raw_object`` it checks for ``ERROR`` events is still there). The only
    other thing the return type feeds is the resume point for the client's
    own reconnects, which it makes only without ``timeout_seconds`` — and
    every watch here passes one.
    """

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]

    def get_return_type(self, func: Any) -> None:
        return None


@dataclass(frozen=True)
class WatchEvent:
    """One watch event: ``ADDED``, ``MODIFIED``, ``DELETED`` (``BOOKMARK`` is filtered)."""

    type: str
    object: dict[str, Any]

    @property
    def resource_version(self) -> str:
        """The object's resourceVersion."""
        return str(self.object.get("metadata", {}).get("resourceVersion", ""))


class KubeClient:
    """Generic calls on the custom resources of one namespace (and cluster-wide lists)."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        namespace: str = "default",
        version: str | None = None,
        outage_budget_s: float = 10.0,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
    ) -> None:
        self.api = api
        self.request_timeout_s = request_timeout_s
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self.namespace = namespace
        self.version = version or DWS_VERSIONS[0]
        self.outage_budget_s = outage_budget_s

    def close(self) -> None:
        """Close the client's connections (idempotent); a later call opens new ones."""
        self.api.close()  # type: ignore[no-untyped-call]

    # --- plumbing ------------------------------------------------------------
    def _before_first_call(self) -> None:
        """Run before this client's first request (a subclass probes its API version)."""

    def _call(self, fn: Callable[[], Any], *, retry: bool = True) -> Any:
        self._before_first_call()
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

    def _on_object(
        self,
        fn: Callable[..., Any],
        ns: str,
        plural: str,
        *args: Any,
        retry: bool = True,
        **options: Any,
    ) -> Any:
        """Call ``fn(group, version, ns, plural, *args, **options)`` with the request
        timeout, through :meth:`_call` (``retry``: safe to repeat)."""
        return self._call(
            lambda: fn(
                DWS_GROUP,
                self.version,
                ns,
                plural,
                *args,
                _request_timeout=self.request_timeout_s,
                **options,
            ),
            retry=retry,
        )

    # --- generic -------------------------------------------------------------
    def get(self, plural: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        """Get one object."""
        ns = namespace or self.namespace
        result: dict[str, Any] = self._on_object(
            self.custom.get_namespaced_custom_object, ns, plural, name
        )
        return result

    def create(
        self, plural: str, body: dict[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Create an object; raises AlreadyExists when it exists."""
        ns = namespace or self.namespace
        result: dict[str, Any] = self._on_object(
            self.custom.create_namespaced_custom_object, ns, plural, body, retry=False
        )
        return result

    def replace(
        self, plural: str, name: str, body: dict[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        """PUT the whole object; its ``metadata.resourceVersion`` guards against lost updates."""
        ns = namespace or self.namespace
        result: dict[str, Any] = self._on_object(
            self.custom.replace_namespaced_custom_object, ns, plural, name, body, retry=False
        )
        return result

    def delete(self, plural: str, name: str, *, namespace: str | None = None) -> bool:
        """Delete an object; return False when it was already gone."""
        ns = namespace or self.namespace
        try:
            self._on_object(self.custom.delete_namespaced_custom_object, ns, plural, name)
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
        result: dict[str, Any] = self._on_object(fn, ns, plural, name, body)
        return result

    def json_patch(
        self,
        plural: str,
        name: str,
        operations: list[dict[str, Any]],
        *,
        namespace: str | None = None,
    ) -> dict[str, Any]:
        """Apply an RFC 6902 JSON Patch to one object, all operations or none. A failed
        ``test`` operation raises Invalid (HTTP 422), so ``test``s guard the changes after
        them in the same request: safe to repeat."""
        ns = namespace or self.namespace
        result: dict[str, Any] = self._on_object(
            self.custom.patch_namespaced_custom_object,
            ns,
            plural,
            name,
            operations,
            _content_type="application/json-patch+json",
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
        """List objects; return them and the list's resourceVersion: one consistent
        snapshot, read in chunks (:meth:`list_pages`), listed again from the start should
        the server expire it between two chunks (at most :data:`LIST_TRIES` times)."""
        for tries_left in range(LIST_TRIES - 1, -1, -1):
            items: list[dict[str, Any]] = []
            try:
                for chunk, rv in self.list_pages(
                    plural, namespace=namespace, selector=selector, all_namespaces=all_namespaces
                ):
                    items += chunk
                    version = rv
            except Gone as exc:
                if not tries_left:
                    raise
                log.info("listing %s again from the start: %s", plural, exc)
                continue
            return items, version
        raise AssertionError("unreachable")  # the last try returns or raises

    def list_pages(
        self,
        plural: str,
        *,
        namespace: str | None = None,
        selector: str | None = None,
        all_namespaces: bool = False,
        limit: int = LIST_PAGE,
    ) -> Iterator[tuple[list[dict[str, Any]], str]]:
        """List objects ``limit`` at a time (``limit`` and ``continue``, as client-go's
        pager does): yield each chunk with the list's resourceVersion. Every chunk comes
        from the same snapshot; raises :class:`~pipeline.errors.Gone` when the server
        expired it between two chunks (410 Expired: list again from the start)."""
        token: str | None = None
        while True:
            options = {
                "label_selector": selector or "",
                "limit": limit,
                "_continue": token,
                "_request_timeout": self.request_timeout_s,
            }
            call = (
                partial(self.custom.list_cluster_custom_object, DWS_GROUP, self.version, plural)
                if all_namespaces
                else partial(
                    self.custom.list_namespaced_custom_object,
                    DWS_GROUP,
                    self.version,
                    namespace or self.namespace,
                    plural,
                )
            )
            result: dict[str, Any] = self._call(partial(call, **options))
            meta = result.get("metadata") or {}
            yield list(result.get("items", [])), str(meta["resourceVersion"])
            token = meta.get("continue") or None
            if token is None:
                return

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
        stream = _Watch().stream(  # type: ignore[no-untyped-call]
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
        are not the pipeline's watcher (:mod:`pipeline.services.watcher` keeps its
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

"""What the simulated API server answers, apart from the wire: routing, verbs, patches, faults.

:mod:`coral2_sim.kube.api` serves it over HTTP (and streams watches);
:mod:`coral2_sim.kube.local` calls it in-process for a controller that
runs inside the server's own process. Both go through :meth:`Routes.answer`,
so they answer alike, faults included.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from coral2_sim.kube.discovery import VERSIONS
from coral2_sim.kube.paging import Pager
from coral2_sim.kube.patch import PatchError, json_patch, merge_patch
from coral2_sim.kube.rbac import Request, request_of
from coral2_sim.kube.resources import TYPES, ApiError, ResourceType
from coral2_sim.kube.store import KubeStore

_CUSTOM = re.compile(
    r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)"
    r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?(?P<status>/status)?$"
)
_CORE = re.compile(
    r"^/api/(?P<version>v1)(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)"
    r"(?:/(?P<name>[^/]+))?(?P<status>/status)?$"
)

_REASONS = {409: "Conflict", 410: "Expired", 500: "InternalError", 503: "ServiceUnavailable"}


@dataclass
class Fault:
    """A fault for the next matching request: an error code, or a delay."""

    code: int | None = None
    delay_s: float = 0.0
    method: str | None = None
    drop_watch: bool = False
    #: only requests whose path holds this (a plural, ``/storages/``), or any
    path: str | None = None


def apply(fault: Fault) -> Fault:
    """Wait ``fault``'s delay and raise its error; return it when it only delays or breaks
    a watch."""
    if fault.delay_s:
        time.sleep(fault.delay_s)
    if fault.code is not None:
        raise ApiError(fault.code, _REASONS.get(fault.code, "Failure"), "injected fault")
    return fault


class RandomFaults:
    """Faults drawn at random for the chaos harness, seeded: each request, with chance
    ``rate``, is answered before it is served (nothing of it done) with a 500 or 503,
    with 409 for a PATCH or PUT (someone changed the object meanwhile), with 410 for a
    watch (its resourceVersion expired), or has its watch stream broken after the first
    event."""

    def __init__(self, rate: float, seed: int) -> None:
        self.rate = rate
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.drawn: dict[int, int] = {}  # code (0: a broken watch) → how many

    def draw(self, method: str, is_watch: bool) -> Fault | None:
        """The fault for one request, or None (most of them)."""
        with self._lock:
            if self._rng.random() >= self.rate:
                return None
            codes = [500, 503]
            if is_watch:
                codes += [410, 0]
            elif method in ("PATCH", "PUT"):
                codes.append(409)
            code = self._rng.choice(codes)
            self.drawn[code] = self.drawn.get(code, 0) + 1
        if code == 0:
            return Fault(drop_watch=True)
        return Fault(code=code)


@dataclass(frozen=True)
class Route:
    """What a request path names."""

    rtype: ResourceType
    version: str
    ns: str | None
    name: str | None
    is_status: bool
    query: dict[str, str]

    @property
    def api_version(self) -> str:
        """``group/version`` (``v1`` for the core group)."""
        return f"{self.rtype.group}/{self.version}" if self.rtype.group else self.version

    @property
    def is_watch(self) -> bool:
        """A watch of a collection (served as a stream, over HTTP only)."""
        return self.name is None and self.query.get("watch") in ("true", "1")

    def request(self, method: str) -> Request:
        """What ``method`` on this path asks, in RBAC's terms."""
        return request_of(
            method,
            group=self.rtype.group,
            resource=self.rtype.plural,
            namespace=self.ns,
            name=self.name,
            status=self.is_status,
            watch=self.is_watch,
        )


#: kube-apiserver's answer to a patch type a resource does not take — a strategic-merge
#: patch of a custom resource among them (apiserver's patch handler).
UNKNOWN_PATCH_FORMAT = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
)


class Routes:
    """The API over one :class:`KubeStore`, with a queue of injected faults."""

    def __init__(
        self, store: KubeStore, versions: dict[str, tuple[str, ...]] | None = None
    ) -> None:
        self.store = store
        #: the versions served of each API group, as its CRDs list them (the discovery's)
        self.versions = versions or VERSIONS
        self.faults: deque[Fault] = deque()
        self.fault_lock = threading.Lock()
        self.down = False  # restarting: in-process clients are refused as HTTP ones are
        self.pager = Pager()  # the snapshots of lists read in chunks

    def take_fault(self, method: str, path: str = "") -> Fault | None:
        """The next injected fault for ``method`` on ``path``, applied: it waits its delay and
        raises its error; returned when it only delays or drops a watch."""
        if not self.faults:  # the common case, without the lock every request would take
            return None
        with self.fault_lock:
            fault = next(
                (
                    f
                    for f in self.faults
                    if f.method in (None, method) and (f.path is None or f.path in path)
                ),
                None,
            )
            if fault is not None:
                self.faults.remove(fault)
        if fault is None:
            return None
        return apply(fault)

    def route(self, path: str, query_string: str) -> Route:
        """Parse a request path; 404 for what the server does not serve."""
        query = {k: v[-1] for k, v in parse_qs(query_string).items()}
        match = _CUSTOM.match(path) or _CORE.match(path)
        rtype = None
        if match is not None:
            group = match.groupdict().get("group") or ""
            rtype = TYPES.get((group, match["plural"]))
            if group and match["version"] not in self.versions.get(group, ()):
                rtype = None  # a version the CRD does not serve: as an unknown path
        if match is None or rtype is None:
            raise ApiError(
                404, "NotFound", f"the server could not find the requested resource ({path})"
            )
        is_status = bool(match["status"])
        if is_status and not rtype.has_status:
            raise ApiError(404, "NotFound", f"{rtype.kind} has no status subresource")
        return Route(rtype, match["version"], match["ns"], match["name"], is_status, query)

    def watch_lines(self, route: Route, fault: Fault | None) -> Iterator[bytes]:
        """The lines of a watch stream: one JSON event each, an ``ERROR`` event to end on an
        error (410 for a resourceVersion older than the event log). With a ``drop_watch``
        fault, the stream ends after its first line; the caller breaks the connection."""
        query = route.query
        rv_text = query.get("resourceVersion")
        since = int(rv_text) if rv_text and rv_text != "0" else None
        until = time.monotonic() + float(query.get("timeoutSeconds") or 3600)
        events = self.store.watch(route.rtype, route.ns, since, query.get("labelSelector"), until)
        try:
            for event in events:
                yield event.line(route.api_version)
                if fault is not None and fault.drop_watch:
                    return
        except ApiError as exc:
            yield json.dumps({"type": "ERROR", "object": exc.status()}).encode() + b"\n"

    def answer(self, method: str, route: Route, content_type: str, body: Any) -> tuple[int, Any]:
        """Answer a request that is not a watch: (HTTP code, JSON body). ApiError on failure.

        ``body`` is handed over: the store may keep it, so a caller that goes on
        using it passes a copy. The answer shares the stored objects: serialize it,
        or copy it before changing it (:mod:`coral2_sim.kube.store`).
        """
        store, rtype, namespace, name = self.store, route.rtype, route.ns or "", route.name
        version = route.api_version
        if method == "GET" and name is None:
            selector = route.query.get("labelSelector")
            items, meta = self.pager.page(
                (rtype.group, rtype.plural, route.ns, selector),
                route.query,
                store.list(rtype, route.ns, selector, copy=False),
                counted=not selector,
            )
            return 200, {
                "apiVersion": version,
                "kind": f"{rtype.kind}List",
                "metadata": meta,
                "items": [{"kind": rtype.kind, **item, "apiVersion": version} for item in items],
            }
        if method == "POST" and name is None:
            if not isinstance(body, dict):
                raise ApiError(400, "BadRequest", "the body must be an object")
            body = {**body, "apiVersion": version, "kind": rtype.kind}
            return 201, store.create(rtype, namespace, body, copy=False)
        if name is None:
            raise ApiError(405, "MethodNotAllowed", f"{method} needs a resource name")
        if method == "GET":
            return 200, {**store.get(rtype, namespace, name, copy=False), "apiVersion": version}
        if method == "DELETE":
            return 200, store.delete(rtype, namespace, name, copy=False)
        if method == "PUT":
            if not isinstance(body, dict):
                raise ApiError(400, "BadRequest", "the body must be an object")
            return 200, store.replace(
                rtype, namespace, name, body, status=route.is_status, require_rv=True, copy=False
            )
        if method == "PATCH":
            return 200, self._patch(route, body, content_type)
        raise ApiError(405, "MethodNotAllowed", f"method {method} is not supported")

    def _patch(self, route: Route, patch: Any, content_type: str) -> dict[str, Any]:
        """Apply a patch; retry internally when a concurrent write wins and no RV was given."""
        store, rtype, namespace = self.store, route.rtype, route.ns or ""
        name = route.name or ""
        given_rv = None
        if isinstance(patch, dict):
            given_rv = (patch.get("metadata") or {}).get("resourceVersion")
        for _ in range(20):
            current = store.get(rtype, namespace, name, copy=False)  # the patch copies it
            try:
                if content_type == "application/json-patch+json":
                    new = json_patch(current, patch)
                elif content_type == "application/merge-patch+json" or (
                    content_type == "application/strategic-merge-patch+json" and rtype.builtin
                ):
                    new = merge_patch(current, patch)
                else:  # a custom resource has no strategic-merge schema
                    raise ApiError(415, "UnsupportedMediaType", UNKNOWN_PATCH_FORMAT)
            except PatchError as exc:
                raise ApiError(422, "Invalid", str(exc)) from exc
            if not isinstance(new, dict):
                raise ApiError(422, "Invalid", "the patched object is not an object")
            if not given_rv:
                new.setdefault("metadata", {})["resourceVersion"] = current["metadata"][
                    "resourceVersion"
                ]
            try:
                return store.replace(
                    rtype, namespace, name, new, status=route.is_status, copy=False
                )
            except ApiError as exc:
                if exc.code != 409 or given_rv:
                    raise
        raise ApiError(409, "Conflict", f"{rtype.kind} {name!r} kept changing; retry")

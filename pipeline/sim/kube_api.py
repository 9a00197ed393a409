"""A Kubernetes-compatible API server on loopback, for the demo and the tests.

The official ``kubernetes`` client talks to it unchanged: paths for
namespaced and cluster-wide custom resources (and core Secrets), 201 on
create, ``Status`` error bodies, merge and JSON patches, PUT with
optimistic concurrency, status subresources, finalizers, label selectors
and chunked watches with replay, ``timeoutSeconds`` and 410 Gone
(runtime-notes.md). Test hooks: :attr:`KubeApiServer.store` for direct
access and :meth:`KubeApiServer.inject` for faults on the next requests.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pipeline.sim.kube_store import TYPES, ApiError, KubeStore, ResourceType
from pipeline.sim.patch import PatchError, json_patch, merge_patch

_CUSTOM = re.compile(
    r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)"
    r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?(?P<status>/status)?$"
)
_CORE = re.compile(
    r"^/api/(?P<version>v1)(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)"
    r"(?:/(?P<name>[^/]+))?(?P<status>/status)?$"
)


@dataclass
class Fault:
    """A fault for the next matching request: an error code, or a delay."""

    code: int | None = None
    delay_s: float = 0.0
    method: str | None = None
    drop_watch: bool = False


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the simulator logs nothing per request."""

    # --- plumbing ---------------------------------------------------------------
    def _send(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Any:
        raw = self._raw
        try:
            return json.loads(raw) if raw else None
        except json.JSONDecodeError as exc:
            raise ApiError(400, "BadRequest", f"invalid JSON body: {exc}") from exc

    def _route(self) -> tuple[ResourceType, str, str | None, str | None, bool, dict[str, str]]:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        match = _CUSTOM.match(parts.path) or _CORE.match(parts.path)
        if match is None:
            raise ApiError(
                404, "NotFound", f"the server could not find the requested resource ({parts.path})"
            )
        group = match.groupdict().get("group") or ""
        rtype = TYPES.get((group, match["plural"]))
        if rtype is None:
            raise ApiError(
                404, "NotFound", f"the server could not find the requested resource ({parts.path})"
            )
        is_status = bool(match["status"])
        if is_status and not rtype.has_status:
            raise ApiError(404, "NotFound", f"{rtype.kind} has no status subresource")
        return rtype, match["version"], match["ns"], match["name"], is_status, query

    def _api_version(self, rtype: ResourceType, version: str) -> str:
        return f"{rtype.group}/{version}" if rtype.group else version

    def _dispatch(self, method: str) -> None:
        # read the whole body first: an early error answer must not leave it in the
        # keep-alive stream, where it would be parsed as the next request
        length = int(self.headers.get("Content-Length") or 0)
        self._raw = self.rfile.read(length) if length else b""
        try:
            fault = self.server.take_fault(method)
            if fault is not None:
                if fault.delay_s:
                    time.sleep(fault.delay_s)
                if fault.code is not None:
                    reasons = {
                        409: "Conflict",
                        410: "Expired",
                        500: "InternalError",
                        503: "ServiceUnavailable",
                    }
                    raise ApiError(fault.code, reasons.get(fault.code, "Failure"), "injected fault")
            rtype, version, ns, name, is_status, query = self._route()
            self._handle(method, rtype, version, ns, name, is_status, query, fault)
        except ApiError as exc:
            self._send(exc.code, exc.status())
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _handle(
        self,
        method: str,
        rtype: ResourceType,
        version: str,
        ns: str | None,
        name: str | None,
        is_status: bool,
        query: dict[str, str],
        fault: Fault | None,
    ) -> None:
        store = self.server.store
        namespace = ns or ""
        if method == "GET" and name is None:
            if query.get("watch") in ("true", "1"):
                self._watch(rtype, version, ns, query, fault)
                return
            items, rv = store.list(rtype, ns, query.get("labelSelector"))
            for item in items:
                item["apiVersion"] = self._api_version(rtype, version)
                item.setdefault("kind", rtype.kind)
            self._send(
                200,
                {
                    "apiVersion": self._api_version(rtype, version),
                    "kind": f"{rtype.kind}List",
                    "metadata": {"resourceVersion": str(rv)},
                    "items": items,
                },
            )
            return
        if method == "POST" and name is None:
            body = self._body()
            if not isinstance(body, dict):
                raise ApiError(400, "BadRequest", "the body must be an object")
            body = {**body, "apiVersion": self._api_version(rtype, version), "kind": rtype.kind}
            self._send(201, store.create(rtype, namespace, body))
            return
        if name is None:
            raise ApiError(405, "MethodNotAllowed", f"{method} needs a resource name")
        if method == "GET":
            obj = store.get(rtype, namespace, name)
            obj["apiVersion"] = self._api_version(rtype, version)
            self._send(200, obj)
        elif method == "DELETE":
            self._send(200, store.delete(rtype, namespace, name))
        elif method == "PUT":
            body = self._body()
            if not isinstance(body, dict):
                raise ApiError(400, "BadRequest", "the body must be an object")
            self._send(
                200, store.replace(rtype, namespace, name, body, status=is_status, require_rv=True)
            )
        elif method == "PATCH":
            patch = self._body()
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            self._send(200, self._patch(rtype, namespace, name, patch, content_type, is_status))
        else:
            raise ApiError(405, "MethodNotAllowed", f"method {method} is not supported")

    def _patch(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        patch: Any,
        content_type: str,
        is_status: bool,
    ) -> dict[str, Any]:
        """Apply a patch; retry internally when a concurrent write wins and no RV was given."""
        store = self.server.store
        given_rv = None
        if isinstance(patch, dict):
            given_rv = (patch.get("metadata") or {}).get("resourceVersion")
        for _ in range(20):
            current = store.get(rtype, namespace, name)
            try:
                if content_type == "application/json-patch+json":
                    new = json_patch(current, patch)
                elif content_type in (
                    "application/merge-patch+json",
                    "application/strategic-merge-patch+json",
                ):
                    new = merge_patch(current, patch)
                else:
                    raise ApiError(
                        415, "UnsupportedMediaType", f"unsupported patch type {content_type!r}"
                    )
            except PatchError as exc:
                raise ApiError(422, "Invalid", str(exc)) from exc
            if not isinstance(new, dict):
                raise ApiError(422, "Invalid", "the patched object is not an object")
            if not given_rv:
                new.setdefault("metadata", {})["resourceVersion"] = current["metadata"][
                    "resourceVersion"
                ]
            try:
                return store.replace(rtype, namespace, name, new, status=is_status)
            except ApiError as exc:
                if exc.code != 409 or given_rv:
                    raise
        raise ApiError(409, "Conflict", f"{rtype.kind} {name!r} kept changing; retry")

    def _watch(
        self,
        rtype: ResourceType,
        version: str,
        ns: str | None,
        query: dict[str, str],
        fault: Fault | None,
    ) -> None:
        rv_text = query.get("resourceVersion")
        since = int(rv_text) if rv_text and rv_text != "0" else None
        timeout_s = float(query.get("timeoutSeconds") or 3600)
        until = time.monotonic() + timeout_s
        events = self.server.store.watch(rtype, ns, since, query.get("labelSelector"), until)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        api_version = self._api_version(rtype, version)
        try:
            for event in events:
                chunk(event.line(api_version))
                if fault is not None and fault.drop_watch:
                    self.close_connection = True
                    return
                if self.server.stopping:
                    break
        except ApiError as exc:
            chunk(json.dumps({"type": "ERROR", "object": exc.status()}).encode() + b"\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def do_GET(self) -> None:
        """Handle GET (get, list, watch)."""
        self._dispatch("GET")

    def do_POST(self) -> None:
        """Handle POST (create)."""
        self._dispatch("POST")

    def do_PUT(self) -> None:
        """Handle PUT (replace)."""
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        """Handle PATCH (merge or JSON patch)."""
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        """Handle DELETE."""
        self._dispatch("DELETE")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], store: KubeStore) -> None:
        super().__init__(address, _Handler)
        self.store = store
        self.faults: deque[Fault] = deque()
        self.fault_lock = threading.Lock()
        self.stopping = False

    def take_fault(self, method: str) -> Fault | None:
        with self.fault_lock:
            for fault in list(self.faults):
                if fault.method is None or fault.method == method:
                    self.faults.remove(fault)
                    return fault
        return None


class KubeApiServer:
    """The simulated API server; use as a context manager or call start/stop."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, store: KubeStore | None = None
    ) -> None:
        self.store = store or KubeStore()
        self._server = _Server((host, port), self.store)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://host:port``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> KubeApiServer:
        """Serve in a background thread."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="kube-api", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and end every watch."""
        self._server.stopping = True
        self.store.close()
        self._server.shutdown()
        self._server.server_close()

    def inject(
        self,
        *,
        code: int | None = None,
        delay_s: float = 0.0,
        method: str | None = None,
        drop_watch: bool = False,
        times: int = 1,
    ) -> None:
        """Make the next ``times`` matching requests fail with ``code`` and/or wait ``delay_s``."""
        with self._server.fault_lock:
            for _ in range(times):
                self._server.faults.append(Fault(code, delay_s, method, drop_watch))

    def __enter__(self) -> KubeApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

"""A Kubernetes-compatible API server on loopback, for the demo and the tests.

The official ``kubernetes`` client talks to it unchanged: paths for
namespaced and cluster-wide custom resources (and core Secrets), 201 on
create, ``Status`` error bodies, merge and JSON patches, PUT with
optimistic concurrency, status subresources, finalizers, label selectors
and chunked watches with replay, ``timeoutSeconds`` and 410 Gone, as
the official client needs them. Test hooks: :attr:`KubeApiServer.store` for direct
access, :meth:`KubeApiServer.inject` for faults on the next requests and
:meth:`KubeApiServer.restart` for a restart over the same objects.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import sys
import threading
import time
from collections import Counter
from http.client import HTTPMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from coral2_sim.kube.discovery import discovery, table, unknown_fields, wants_table
from coral2_sim.kube.rbac import Authorizer
from coral2_sim.kube.resources import ApiError
from coral2_sim.kube.routes import Fault, RandomFaults, Route, Routes, apply
from coral2_sim.kube.sim_paths import (
    answer_sim_path,
)
from coral2_sim.kube.store import KubeStore

#: The largest body kube-apiserver decodes for a write (twice etcd's limit: JSON is
#: larger than the protobuf it stores).
MAX_REQUEST_BYTES = 3 * 1024 * 1024
#: Longest request line or header line, and most header lines, a request may have.
_MAX_LINE = 65536
_MAX_HEADERS = 100


#: The most of a refused body read past to keep the connection (a larger one closes it).
DISCARD_BYTES = 64 * 1024 * 1024


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server
    raw_requestline: bytes  # read by the base class's handle_one_request
    _date: tuple[int, str] = (0, "")  # (epoch s, its Date header): one formatting a second

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the simulator logs nothing per request."""

    def parse_request(self) -> bool:
        """The request line and headers of an HTTP/1.x request, read without the
        ``email`` package: the standard library's parser took about half of the
        server's time per request. Malformed input gets 400 (431 for oversized
        headers) and closes the connection, as the base class does."""
        self.command, self.request_version = "", self.protocol_version  # what an error reads
        self.close_connection = True
        self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        words = self.requestline.split()
        if len(words) != 3 or words[2] not in ("HTTP/1.0", "HTTP/1.1"):
            self.send_error(
                400, f"Bad request line ({self.requestline!r}): want METHOD PATH HTTP/1.x"
            )
            return False
        self.command, self.path, self.request_version = words
        headers = HTTPMessage()
        while True:
            line = self.rfile.readline(_MAX_LINE + 1)
            if line in (b"\r\n", b"\n", b""):
                break
            name, colon, value = str(line, "iso-8859-1").partition(":")
            if len(line) > _MAX_LINE or len(headers) >= _MAX_HEADERS:
                self.send_error(431, "Request header fields too large")
                return False
            if not colon or not name.strip():
                self.send_error(400, f"Bad header line {line[:80]!r}: want Name: value")
                return False
            headers[name.strip()] = value.strip()
        self.headers = headers
        connection = (headers.get("Connection") or "").lower()
        self.close_connection = connection == "close" or (
            self.request_version == "HTTP/1.0" and connection != "keep-alive"
        )
        if (headers.get("Expect") or "").lower() == "100-continue":
            return self.handle_expect_100()
        return True

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The Date header, formatted once a second."""
        if timestamp is not None:
            return super().date_time_string(timestamp)
        now = int(time.time())
        second, text = _Handler._date
        if second != now:
            text = super().date_time_string(now)
            _Handler._date = (now, text)
        return text

    def _send(self, code: int, body: Any) -> None:
        """The whole answer in one write: status line, headers and JSON body."""
        data = json.dumps(body).encode()
        head = (
            f"{self.protocol_version} {code} {self.responses.get(code, ('',))[0]}\r\n"
            f"Server: {self.version_string()}\r\nDate: {self.date_time_string()}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        self.wfile.write(head.encode("latin-1") + data)

    def _dispatch(self, method: str) -> None:
        # read the whole body first: an early error answer must not leave it in the
        # keep-alive stream, where it would be parsed as the next request
        text = self.headers.get("Content-Length") or "0"
        if not (text.isascii() and text.isdigit()):
            # as Go's net/http answers a bad length, before any handler (and closes)
            answer = b"400 Bad Request: bad Content-Length"
            head = (
                f"{self.protocol_version} 400 Bad Request\r\nConnection: close\r\n"
                "Content-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(answer)}\r\n\r\n"
            )
            self.wfile.write(head.encode() + answer)
            self.close_connection = True
            return
        length = int(text)
        if length > MAX_REQUEST_BYTES:  # kube-apiserver's limit on a write's body
            message = f"Request entity too large: limit is {MAX_REQUEST_BYTES}"
            left = length  # read past, a piece at a time, what the stream must lose
            while 0 < left <= DISCARD_BYTES and (piece := self.rfile.read(min(left, 65536))):
                left -= len(piece)
            self._send(413, ApiError(413, "RequestEntityTooLarge", message).status())
            self.close_connection = left > 0  # a body too large to read past ends the stream
            return
        raw = self.rfile.read(length) if length else b""
        if not self.path.startswith("/sim/"):
            self.server.count(self.headers.get("User-Agent") or "")
        try:
            self._answer(method, raw)
        except (BrokenPipeError, ConnectionResetError):  # the client left (timed out): so do we
            self.close_connection = True

    def _answer(self, method: str, raw: bytes) -> None:
        routes = self.server.routes
        if self.path.startswith("/sim/") and answer_sim_path(self, method, raw):
            return
        try:
            parts = urlsplit(self.path)
            authorizer = self.server.authorizer
            user = None
            if authorizer is not None:
                user = authorizer.authenticate(self.headers.get("Authorization"))
            if method == "GET" and (about := discovery(parts.path)) is not None:
                self._send(200, about)
                return
            fault = routes.take_fault(method, parts.path)
            route = routes.route(parts.path, parts.query)
            if authorizer is not None and user is not None:
                authorizer.authorize(user, route.request(method))
            chaos = self.server.chaos
            if fault is None and chaos is not None:
                drawn = chaos.draw(method, method == "GET" and route.is_watch)
                fault = None if drawn is None else apply(drawn)
            if method == "GET" and route.is_watch:
                self._watch(route, fault)
                return
            try:
                body = json.loads(raw) if raw else None
            except json.JSONDecodeError as exc:
                raise ApiError(400, "BadRequest", f"invalid JSON body: {exc}") from exc
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            strict = route.query.get("fieldValidation") == "Strict"
            if strict and isinstance(body, dict) and (unknown := unknown_fields(body)):
                fields = ", ".join(f"unknown field {f!r}".replace("'", '"') for f in unknown)
                raise ApiError(400, "BadRequest", f"strict decoding error: {fields}")
            code, answer = routes.answer(method, route, content_type, body)
            if (
                method == "GET"
                and route.name is None
                and wants_table(self.headers.get("Accept", ""))
            ):
                answer = table(route.rtype, answer["items"], answer["metadata"]["resourceVersion"])
            self._send(code, answer)
        except ApiError as exc:
            self._send(exc.code, exc.status())

    def _watch(self, route: Route, fault: Fault | None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = False
        tabled = wants_table(self.headers.get("Accept", ""))
        for raw in self.server.routes.watch_lines(route, fault):
            line = raw
            if tabled:  # kubectl get -w: each object as a one-row Table
                event = json.loads(raw)
                if event.get("type") != "ERROR":
                    obj = event["object"]
                    rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
                    event["object"] = table(route.rtype, [obj], rv)
                line = json.dumps(event).encode() + b"\n"
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
            sent = True
            if self.server.stopping:
                break
        if sent and fault is not None and fault.drop_watch:
            self.close_connection = True  # mid-stream: the client sees a broken connection
            return
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

    def __init__(
        self, address: tuple[str, int], routes: Routes, tls: ssl.SSLContext | None = None
    ) -> None:
        super().__init__(address, _Handler)
        if tls is not None:  # the handshake happens in the request's thread, not in accept
            self.socket = tls.wrap_socket(
                self.socket, server_side=True, do_handshake_on_connect=False
            )
        self.tls = tls
        self.routes = routes
        self.stopping = False
        self.chaos: RandomFaults | None = None  # faults at random, for HTTP clients only
        self.dws_faults: Any = None  # the DWS controller's Faults, when it runs here
        self.agents: Counter[str] = Counter()
        self._agents_lock = threading.Lock()
        self.restart: Any = None  # KubeApiServer.restart, for RESTART_PATH
        self.restarts = 0
        self.authorizer: Authorizer | None = None  # None: every request is allowed
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet about a client that failed its TLS handshake or left; loud otherwise."""
        if isinstance(sys.exc_info()[1], ssl.SSLError | ConnectionError):
            return
        super().handle_error(request, client_address)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def cut_connections(self) -> None:
        """Break every open connection, as a dying server process does."""
        with self._open_lock:
            open_now = list(self._open)
        for sock in open_now:
            with contextlib.suppress(OSError):  # it closed meanwhile
                sock.shutdown(socket.SHUT_RDWR)

    def count(self, user_agent: str) -> None:
        """Count one request by its User-Agent."""
        with self._agents_lock:
            self.agents[user_agent] += 1


class KubeApiServer:
    """The simulated API server; use as a context manager or call start/stop."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        store: KubeStore | None = None,
        authorizer: Authorizer | None = None,
        tls: ssl.SSLContext | None = None,
        versions: dict[str, tuple[str, ...]] | None = None,
    ) -> None:
        self.store = store or KubeStore()
        self.routes = Routes(self.store, versions)
        self._server = _Server((host, port), self.routes, tls)
        self._server.authorizer = authorizer
        self._server.restart = self.restart
        self._thread: threading.Thread | None = None
        self.restarts = 0

    @property
    def authorizer(self) -> Authorizer | None:
        """Who may do what over HTTP (:mod:`coral2_sim.kube.rbac`); None: anyone anything."""
        return self._server.authorizer

    def requests_by_agent(self) -> dict[str, int]:
        """How many requests each User-Agent made so far."""
        with self._server._agents_lock:
            return dict(self._server.agents)

    @property
    def url(self) -> str:
        """``http://host:port`` (``https://`` when it serves TLS)."""
        host, port = self._server.server_address[:2]
        return f"{'https' if self._server.tls else 'http'}://{host!s}:{port}"

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

    def restart(self, down_s: float) -> None:
        """Go down for ``down_s`` and come back on the same port over the same objects, as a
        restarted API server over its etcd: every connection is cut, requests in the
        meantime are refused (in-process clients' too), and the watch cache starts afresh
        at the latest resourceVersion, so a watch resumed from before gets 410 Expired."""
        host, port = self._server.server_address[:2]
        chaos, agents, authorizer = self._server.chaos, self._server.agents, self.authorizer
        dws_faults = self._server.dws_faults
        self.routes.down = True
        self.stop()
        self._server.cut_connections()
        time.sleep(down_s)
        self.store.restart()
        while True:  # the port may linger a moment in the kernel
            try:
                self._server = _Server((str(host), int(port)), self.routes, self._server.tls)
                break
            except OSError:
                time.sleep(0.1)
        self._server.chaos, self._server.agents = chaos, agents
        self._server.dws_faults = dws_faults
        self._server.authorizer = authorizer
        self._server.restart = self.restart
        self.routes.down = False
        self.restarts += 1
        self._server.restarts = self.restarts
        self.start()

    def serve_faults(self, faults: Any) -> None:
        """Let a PUT of :data:`FAULTS_PATH` change the DWS controller's ``faults`` (the
        controller running in this process)."""
        self._server.dws_faults = faults

    def faults_at_random(self, rate: float, seed: int) -> RandomFaults:
        """From now on, answer HTTP requests with faults at random (:class:`RandomFaults`);
        the in-process clients (the simulated DWS controller) get none."""
        self._server.chaos = RandomFaults(rate, seed)
        return self._server.chaos

    def inject(
        self,
        *,
        code: int | None = None,
        delay_s: float = 0.0,
        method: str | None = None,
        drop_watch: bool = False,
        times: int = 1,
        path: str | None = None,
    ) -> None:
        """Make the next ``times`` matching requests (``method``, a ``path`` holding
        ``path``) fail with ``code`` and/or wait ``delay_s``."""
        with self.routes.fault_lock:
            for _ in range(times):
                self.routes.faults.append(Fault(code, delay_s, method, drop_watch, path))

    def __enter__(self) -> KubeApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

"""The exporter's TLS and basic authentication, read from a web configuration file in the
format of Prometheus's exporter toolkit (``--web.config.file``, as node_exporter and
redis_exporter take it)::

    tls_server_config:
      cert_file: /etc/coral2-pipeline/exporter.crt
      key_file: /etc/coral2-pipeline/exporter.key
      client_auth_type: RequireAndVerifyClientCert   # or NoClientCert (the default)
      client_ca_file: /etc/coral2-pipeline/prometheus-ca.crt
      min_version: TLS12
    basic_auth_users:
      prometheus: $2y$10$...   # a bcrypt hash: htpasswd -nBC 10 "" | tr -d ':\\n'

Relative paths are read from the file's directory, as the toolkit does. A key this
exporter does not know is refused, not ignored, so a setting meant to protect the
metrics never silently does nothing."""

from __future__ import annotations

import base64
import hashlib
import hmac
import socket
import ssl
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any, Literal
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import bcrypt
import pydantic
from prometheus_client import CollectorRegistry, make_wsgi_app

from pipeline.errors import ConfigError
from pipeline.model import files
from pipeline.model.pydantic_errors import describe_validation_error

#: The TLS versions by the toolkit's names.
VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
#: The client certificate policies this exporter carries out, by the toolkit's names.
CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}


class TlsServerConfig(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    cert_file: str
    key_file: str
    client_auth_type: Literal[
        "NoClientCert", "VerifyClientCertIfGiven", "RequireAndVerifyClientCert"
    ] = "NoClientCert"
    client_ca_file: str | None = None
    min_version: Literal["TLS10", "TLS11", "TLS12", "TLS13"] = "TLS12"
    max_version: Literal["TLS10", "TLS11", "TLS12", "TLS13"] = "TLS13"


class WebConfig(pydantic.BaseModel):
    """The web configuration file: each part optional, nothing else."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)

    tls_server_config: TlsServerConfig | None = None
    basic_auth_users: dict[str, str] = pydantic.Field(default_factory=dict)

    @pydantic.field_validator("basic_auth_users")
    @classmethod
    def _bcrypt(cls, users: dict[str, str]) -> dict[str, str]:
        for user, hashed in users.items():
            if not hashed.startswith(("$2a$", "$2b$", "$2y$")) or len(hashed) != 60:
                raise ValueError(
                    f"{user}'s password is not a bcrypt hash: make one with "
                    "`htpasswd -nBC 10 \"\" | tr -d ':\\n'`"
                )
        return users


def load(path: str) -> tuple[WebConfig, Path]:
    """The web configuration at ``path``, and the directory its relative paths are in."""
    where = Path(path)
    # a FIFO, a device, a file too large or an alias bomb is refused as every file is
    documents = files.load(path, "--web.config.file", "yaml")
    if len(documents) > 1:
        raise ConfigError(
            f"--web.config.file {path}: holds {len(documents)} YAML documents, not one"
        )
    raw = documents[0] if documents else {}
    try:
        return WebConfig.model_validate(raw or {}), where.parent
    except pydantic.ValidationError as exc:
        why = describe_validation_error("web configuration", exc)
        raise ConfigError(f"--web.config.file {path}: {why}") from exc


def tls_context(config: TlsServerConfig, base: Path) -> ssl.SSLContext:
    """The server's TLS context, as ``config`` asks."""

    def file(name: str | None) -> str | None:
        return None if name is None else str(base / name)

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = VERSIONS[config.min_version]
    context.maximum_version = VERSIONS[config.max_version]
    try:
        context.load_cert_chain(file(config.cert_file) or "", file(config.key_file))
        context.verify_mode = CLIENT_AUTH[config.client_auth_type]
        if config.client_auth_type != "NoClientCert":
            if config.client_ca_file is None:
                raise ConfigError(
                    f"tls_server_config: client_auth_type {config.client_auth_type} needs "
                    "client_ca_file, the CA that signs Prometheus's client certificate"
                )
            context.load_verify_locations(cafile=file(config.client_ca_file))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"tls_server_config: {exc}") from exc
    return context


class BasicAuth:
    """A WSGI application that answers 401 unless the request names a user of ``users``
    with that user's password; a password checked once is remembered by its digest, so
    each scrape does not pay bcrypt's cost, as the toolkit caches."""

    def __init__(self, app: Callable[..., Iterable[bytes]], users: dict[str, str]) -> None:
        self.app, self.users = app, users
        self._good: set[tuple[str, bytes]] = set()
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        if self._allowed(str(environ.get("HTTP_AUTHORIZATION", ""))):
            return self.app(environ, start)
        start(
            "401 Unauthorized",
            [("Content-Type", "text/plain"), ("WWW-Authenticate", 'Basic realm="coral2"')],
        )
        return [b"Unauthorized\n"]

    def _allowed(self, header: str) -> bool:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            user, _, password = base64.b64decode(token, validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        hashed = self.users.get(user)
        if hashed is None:
            return False
        digest = hashlib.sha256(f"{hashed}\0{password}".encode()).digest()
        with self._lock:
            if any(u == user and hmac.compare_digest(d, digest) for u, d in self._good):
                return True
        if not bcrypt.checkpw(password.encode(), hashed.encode()):
            return False
        with self._lock:
            self._good.add((user, digest))
        return True


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per scrape would fill the journal


def serve(
    registry: CollectorRegistry, address: str, port: int, config: WebConfig, base: Path
) -> tuple[WSGIServer, threading.Thread]:
    """Serve ``/metrics`` of ``registry`` as ``config`` asks, in a thread of its own."""
    app: Callable[..., Iterable[bytes]] = make_wsgi_app(registry)
    if config.basic_auth_users:
        app = BasicAuth(app, config.basic_auth_users)
    context = tls_context(config.tls_server_config, base) if config.tls_server_config else None

    class Server(_Server):  # the address's own family: an IPv6 address listens on IPv6
        address_family = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)[0][0]

    server = make_server(address, port, app, Server, handler_class=_Quiet)
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread

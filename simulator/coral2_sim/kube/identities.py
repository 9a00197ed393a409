"""Who talks to the simulated system's API server, and with which token.

The simulated system runs its API server as a site runs kube-apiserver: over TLS, with
a bearer token per user (``--token-auth-file``) and RBAC enforcing the rules we ship
(``deploy/k8s/coral2-pipeline.yaml``) for the pipeline's ServiceAccount. (kubectl sends
no token over plain HTTP, so a server that authenticates serves TLS.) Three users:

* the harness, the demo's kubectl and the tests: an admin in ``system:masters``;
* the pipeline's processes: the ServiceAccount ``coral2-pipeline`` — only what its roles
  grant, so a verb missing from the rules fails the demo as it would fail a site;
* DWS's own daemons (the simulated nnf-clientmountd): DWS's identity, unrestricted here
  (DWS ships its own roles).
"""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import json
import secrets
import ssl
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes import client

from coral2_sim.kube.discovery import kubeconfig
from coral2_sim.kube.rbac import MASTERS
from coral2_sim.kube.sim_paths import RBAC_PATH
from pipeline.clients.kube_auth import api_client
from pipeline.platform.pki import write_private

#: the pipeline's ServiceAccount, as deploy/k8s/coral2-pipeline.yaml creates it
PIPELINE_USER = "system:serviceaccount:coral2-pipeline:coral2-pipeline"
#: the roles that ServiceAccount is bound to
PIPELINE_ROLES = ("coral2-pipeline", "coral2-pipeline-read")


def rbac_manifest() -> Path:
    """The RBAC manifest we ship, as the installed package holds it."""
    return Path(str(resources.files("pipeline") / "data" / "k8s-rbac.yaml"))


@dataclass(frozen=True)
class KubeEndpoint:
    """Where the simulated API server listens, and the credentials of who talks to it."""

    url: str
    admin_token: str | None = None
    #: the pipeline's ServiceAccount (None: the server authenticates nobody)
    pipeline_kubeconfig: Path | None = None
    #: DWS's own daemons
    dws_kubeconfig: Path | None = None
    admin_kubeconfig: Path | None = None
    token_file: Path | None = None
    #: the server's certificate and key (self-signed: the certificate is its own CA)
    tls_cert: Path | None = None
    tls_key: Path | None = None

    def api(self) -> client.ApiClient:
        """An admin's client (the harness's)."""
        if self.admin_kubeconfig is not None:
            return api_client(kubeconfig=str(self.admin_kubeconfig))
        return api_client(host=self.url)

    def server_args(self) -> list[str]:
        """The ``sim kube-api`` flags that make it authenticate, authorize and serve TLS."""
        if self.token_file is None or self.tls_cert is None or self.tls_key is None:
            return []
        return [
            *("--token-auth-file", str(self.token_file), "--rbac", str(rbac_manifest())),
            *("--tls-cert-file", str(self.tls_cert), "--tls-private-key-file", str(self.tls_key)),
        ]

    def sim(self, path: str, body: dict[str, Any] | None = None, timeout: float = 10) -> Any:
        """GET (or PUT ``body`` to) one of the simulator's own paths; its JSON answer. The
        connection is closed however the request ends (a server restarting may cut it in
        the middle of its TLS handshake)."""
        parts = urlsplit(self.url)
        host, port = parts.hostname or "127.0.0.1", parts.port
        connection: http.client.HTTPConnection
        if parts.scheme == "https":
            context = ssl.create_default_context(cafile=str(self.tls_cert))
            connection = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
        else:
            connection = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            data = None if body is None else json.dumps(body).encode()
            connection.request("GET" if body is None else "PUT", path, body=data)
            answer = connection.getresponse()
            raw = answer.read()
            if answer.status >= 400:
                raise OSError(f"{path}: HTTP {answer.status}: {raw[:200]!r}")
            return json.loads(raw)
        finally:
            connection.close()

    def rbac(self) -> tuple[dict[str, set[tuple[str, str, str]]], list[str]]:
        """What RBAC allowed each user so far (``(api group, resource, verb)``), and the
        message of each request it refused."""
        body = self.sim(RBAC_PATH)
        used = {user: {tuple(rule) for rule in rules} for user, rules in body["used"].items()}
        return used, list(body["refused"])


def with_identities(port: int, directory: Path | None = None) -> KubeEndpoint:
    """A certificate for ``https://127.0.0.1:port``, the token file and each user's
    kubeconfig, written (0600) under ``directory`` (a new one if None)."""
    directory = directory or Path(tempfile.mkdtemp(prefix="coral2-kube-"))
    directory.mkdir(parents=True, exist_ok=True)
    url = f"https://127.0.0.1:{port}"
    cert, key = directory / "apiserver.crt", directory / "apiserver.key"
    ca_pem = _self_signed(cert, key)
    admin, pipeline, dws = (secrets.token_urlsafe(24) for _ in range(3))
    token_file = directory / "tokens.csv"
    write_private(
        token_file,
        (
            f'{admin},kubernetes-admin,admin,"{MASTERS}"\n'
            f'{pipeline},{PIPELINE_USER},coral2-pipeline,"system:serviceaccounts,'
            'system:serviceaccounts:coral2-pipeline"\n'
            f'{dws},system:serviceaccount:nnf-system:nnf-clientmount,nnf,"{MASTERS}"\n'
        ).encode(),
    )
    configs = {}
    for user, token in (("pipeline", pipeline), ("dws", dws), ("admin", admin)):
        configs[user] = directory / f"{user}.kubeconfig"
        write_private(configs[user], kubeconfig(url, token=token, ca_pem=ca_pem).encode())
    return KubeEndpoint(
        url,
        admin,
        configs["pipeline"],
        configs["dws"],
        configs["admin"],
        token_file,
        cert,
        key,
    )


def _self_signed(cert_path: Path, key_path: Path) -> bytes:
    """A self-signed certificate for 127.0.0.1 and localhost; its PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        # valid from a day before: a host clock stepped back an hour (the chaos class
        # ``clock``) still trusts it, as a site's long-issued certificate would be
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    write_private(
        key_path,
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
    cert_path.write_bytes(pem)
    return pem

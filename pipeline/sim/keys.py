"""Message-signing keys for the demo: made at start, gone with its work directory.

A site makes its own with its PKI (docs/security.md). The demo makes two
self-signed pairs with ``cryptography`` — the management side's, which signs
every task the pipeline sends, and the node workers', which sign only their
answers — and three certificate stores: the management side trusts its own
certificate for every task and the node certificate for node answers only
(``security_node_cert_store``); a node worker trusts the management side
alone, so it runs nothing a node (or anyone without the management key)
signed.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Signer:
    """One key pair and the certificate store its owner trusts."""

    key: Path
    certificate: Path
    store: Path
    answers: Path | None = None  # certificates trusted for node answers only

    def env(self) -> dict[str, str]:
        """The settings that make a process sign with this key and trust these stores."""
        env = {
            "CORAL2_PIPELINE_PIPELINE__SECURITY_KEY": str(self.key),
            "CORAL2_PIPELINE_PIPELINE__SECURITY_CERTIFICATE": str(self.certificate),
            "CORAL2_PIPELINE_PIPELINE__SECURITY_CERT_STORE": str(self.store),
        }
        if self.answers is not None:
            env["CORAL2_PIPELINE_PIPELINE__SECURITY_NODE_CERT_STORE"] = str(self.answers)
        return env


def key_pair(directory: Path, name: str) -> tuple[Path, Path]:
    """Write ``<name>.key`` (mode 0600) and a self-signed ``<name>.crt`` into ``directory``."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"coral2-pipeline {name}")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    key_path, cert_path = directory / f"{name}.key", directory / f"{name}.crt"
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return key_path, cert_path


def demo_signers(directory: Path) -> tuple[Signer, Signer]:
    """The management side's signer and the node workers' (see the module docstring)."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    mgmt_key, mgmt_cert = key_pair(directory, "management")
    node_key, node_cert = key_pair(directory, "node")
    mgmt_store, node_store = directory / "management-trusts", directory / "node-trusts"
    answers = directory / "node-answers-trusts"
    for store, cert in ((mgmt_store, mgmt_cert), (node_store, mgmt_cert), (answers, node_cert)):
        store.mkdir(exist_ok=True)
        (store / cert.name).write_bytes(cert.read_bytes())
    management = Signer(mgmt_key, mgmt_cert, mgmt_store, answers)
    return management, Signer(node_key, node_cert, node_store)

"""Keys and certificates: the site CA issues one per node, with its hostname as name.

``coral2-pipeline node-cert HOSTLIST`` writes ``<host>.key`` (mode 0600) and
``<host>.crt`` for each node, issued by the CA of ``pipeline.site_ca_key``
and ``pipeline.site_ca_certificate``: the key goes to that node alone, the
certificate into the management side's ``security_node_cert_store``. A
node's certificate names it (common name and DNS subject alternative
name), and the management side accepts its answers only for that node
(``pipeline.platform.signing``). The demo makes its CA and every node's
pair the same way (``coral2_sim.keys``).
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import (
    CertificateIssuerPrivateKeyTypes,
    PublicKeyTypes,
)
from cryptography.x509.oid import NameOID

from pipeline.errors import ConfigError
from pipeline.model.files import PEM_BYTES, read_bytes

#: How long an issued node certificate is valid (days) unless told otherwise.
NODE_CERT_DAYS = 825


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` with mode 0600 from the start (never readable by others)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.chmod(path, 0o600)


def _pem_key(key: CertificateIssuerPrivateKeyTypes) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _public(key: PublicKeyTypes) -> bytes:
    """A public key's DER bytes, to compare two keys."""
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_ca(
    directory: Path, name: str = "coral2-pipeline site CA", days: int = 3650
) -> tuple[Path, Path]:
    """Write a self-signed CA (``ca.key``, mode 0600, and ``ca.crt``) into ``directory``."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(_name(name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_path, cert_path = directory / "ca.key", directory / "ca.crt"
    write_private(key_path, _pem_key(key))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_path, cert_path


class CertificateAuthority:
    """The site CA, loaded from its key and certificate files."""

    def __init__(self, key_path: str | Path, cert_path: str | Path) -> None:
        key_pem = read_bytes(key_path, "the site CA key", PEM_BYTES)
        cert_pem = read_bytes(cert_path, "the site CA certificate", PEM_BYTES)
        try:
            key = serialization.load_pem_private_key(key_pem, password=None)
        except (ValueError, TypeError) as exc:
            raise ConfigError(
                f"the site CA key {str(key_path)!r} is not a PEM key: {exc}"
            ) from None
        try:
            self.certificate = x509.load_pem_x509_certificate(cert_pem)
        except ValueError as exc:
            why = f"the site CA certificate {str(cert_path)!r} is not a PEM certificate: {exc}"
            raise ConfigError(why) from None
        if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
            raise ConfigError(f"the site CA key {str(key_path)!r}: an RSA or EC key is needed")
        if _public(key.public_key()) != _public(self.certificate.public_key()):
            raise ConfigError(
                f"the site CA key {str(key_path)!r} is not the key of the certificate "
                f"{str(cert_path)!r}: what it signed nobody could verify"
            )
        try:
            constraints = self.certificate.extensions.get_extension_for_class(
                x509.BasicConstraints
            ).value
        except x509.ExtensionNotFound:
            constraints = None
        if constraints is None or not constraints.ca:
            raise ConfigError(f"the site CA certificate {str(cert_path)!r} is not a CA's")
        self.key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey = key

    def issue(
        self, directory: Path, name: str, days: int = NODE_CERT_DAYS, *, key_type: str = "rsa"
    ) -> tuple[Path, Path]:
        """Write ``<name>.key`` (mode 0600) and ``<name>.crt`` issued by this CA, named
        ``name`` (a node's hostname). ``key_type`` ``rsa`` (2048 bits: the fastest to
        verify, for a node's answers) or ``ec`` (P-256: the fastest to sign, for the
        management key, which signs a message per node of every job)."""
        key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
        if key_type == "ec":
            key = ec.generate_private_key(ec.SECP256R1())
        elif key_type == "rsa":
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        else:
            raise ValueError(f"unknown key type {key_type!r}: rsa or ec")
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        key_path, cert_path = directory / f"{name}.key", directory / f"{name}.crt"
        write_private(key_path, _pem_key(key))
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return key_path, cert_path

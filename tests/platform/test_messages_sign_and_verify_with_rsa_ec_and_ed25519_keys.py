"""A message signed with an RSA, EC (P-256) or Ed25519 key verifies against that key's
certificate and against no other; a key of another kind (DSA) is refused at start with
the kinds that work."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa
from cryptography.x509.oid import NameOID

from pipeline.platform.signer_keys import SigningKey, VerifyingCertificate
from pipeline.platform.signing import MANAGEMENT, Refused, StrictSerializer, TrustStore

KINDS = {
    "rsa": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
    "ec": lambda: ec.generate_private_key(ec.SECP256R1()),
    "ed25519": ed25519.Ed25519PrivateKey.generate,
}
BODY = [[], {"jobid": 1, "hostname": "compute01"}, {}]


def pair(directory: Path, kind: str, name: str) -> tuple[str, str]:
    key = KINDS[kind]()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    digest = None if kind == "ed25519" else hashes.SHA256()
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, digest)
    )
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    (directory / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return pem, (directory / f"{name}.crt").read_text()


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_message_signed_with_the_key_verifies_against_its_certificate_alone(
    tmp_path: Path, kind: str
) -> None:
    store, other = tmp_path / "store", tmp_path / "other"
    store.mkdir()
    other.mkdir()
    key, cert = pair(store, kind, "management")
    trust = TrustStore()
    trust.add_directory(str(store), MANAGEMENT)
    signer = StrictSerializer((SigningKey(key), VerifyingCertificate(cert)), trust, "sha256")
    args, kwargs, embed = signer.deserialize(signer.serialize(BODY))
    assert [args, kwargs] == BODY[:2]
    assert embed["coral2_signer"] == MANAGEMENT
    stranger_key, stranger_cert = pair(other, kind, "management")  # same name, other key
    stranger = StrictSerializer(
        (SigningKey(stranger_key), VerifyingCertificate(stranger_cert)), trust, "sha256"
    )
    with pytest.raises(Refused):
        signer.deserialize(stranger.serialize(BODY))


def test_a_dsa_key_is_refused_with_the_kinds_that_work() -> None:
    key = dsa.generate_private_key(key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    with pytest.raises(ValueError, match="use an RSA, EC"):
        SigningKey(pem)

"""The keys and certificates messages are signed and verified with: RSA (PSS, as Celery's
``auth`` serializer signs), EC (ECDSA on P-256 or P-384) or Ed25519.

Celery's own classes take RSA alone. An RSA signature costs several times an ECDSA one,
and an RSA verification a fraction of an ECDSA one (``make bench`` prints both, and
docs/performance.md). The management side signs one message per node of a job, while a
node verifies its own message alone; so the management key is best EC, and a node's key
(its answers, verified by the management side) RSA. Certificates are named as Celery
names them (issuer and serial), so envelopes and stores stay Celery's.
"""

from __future__ import annotations

import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa

from pipeline.errors import ConfigError
from pipeline.model.files import PEM_BYTES, read_text
from pipeline.settings.secrets import check_private

SigningKeyTypes = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey


def _pss(digest: hashes.HashAlgorithm) -> padding.PSS:
    return padding.PSS(mgf=padding.MGF1(digest), salt_length=padding.PSS.MAX_LENGTH)


class SigningKey:
    """A private key that signs message bodies."""

    def __init__(self, pem: str, *, check: bool = True) -> None:
        """``check=False`` skips the RSA key's consistency check (about 60 ms a key): for
        a process that loads thousands of keys of its own making (the simulator's node
        workers); a real node's worker loads its one key with the check."""
        key = serialization.load_pem_private_key(
            pem.encode(), password=None, unsafe_skip_rsa_key_validation=not check
        )
        if not isinstance(key, SigningKeyTypes):
            raise ValueError(
                f"a {type(key).__name__} cannot sign: use an RSA, EC (P-256, P-384) or Ed25519 key"
            )
        self._key = key

    def matches(self, certificate: VerifyingCertificate) -> bool:
        """Whether ``certificate`` is this key's (its public key is this key's)."""
        fmt = serialization.PublicFormat.SubjectPublicKeyInfo
        own = self._key.public_key().public_bytes(serialization.Encoding.DER, fmt)
        return own == certificate.public_der()

    def sign(self, data: bytes, digest: hashes.HashAlgorithm) -> bytes:
        """The signature of ``data``."""
        key = self._key
        if isinstance(key, rsa.RSAPrivateKey):
            return key.sign(data, _pss(digest), digest)
        if isinstance(key, ec.EllipticCurvePrivateKey):
            return key.sign(data, ec.ECDSA(digest))
        return key.sign(data)


class VerifyingCertificate:
    """A certificate whose key verifies signatures, named as Celery names it."""

    def __init__(self, pem: str) -> None:
        self.x509 = x509.load_pem_x509_certificate(pem.encode())
        public = self.x509.public_key()
        if not isinstance(
            public, rsa.RSAPublicKey | ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey
        ):
            raise ValueError(
                f"a certificate of a {type(public).__name__} cannot verify: use an RSA, EC "
                "or Ed25519 key"
            )
        self._public = public

    def public_der(self) -> bytes:
        """The certificate's public key, DER-encoded."""
        fmt = serialization.PublicFormat.SubjectPublicKeyInfo
        return self._public.public_bytes(serialization.Encoding.DER, fmt)

    def get_id(self) -> str:
        """The issuer and serial number, as Celery's ``Certificate.get_id``."""
        issuer = " ".join(str(attribute.value) for attribute in self.x509.issuer)
        return f"{issuer} {self.x509.serial_number}"

    def has_expired(self) -> bool:
        """Whether it is past its validity."""
        return datetime.datetime.now(datetime.UTC) >= self.x509.not_valid_after_utc

    def verify(self, data: bytes, signature: bytes, digest: hashes.HashAlgorithm) -> None:
        """Raise ValueError unless ``signature`` is this key's over ``data`` and the
        certificate is still valid."""
        if self.has_expired():
            raise ValueError(f"expired certificate {self.get_id()!r}")
        public = self._public
        try:
            if isinstance(public, rsa.RSAPublicKey):
                public.verify(signature, data, _pss(digest), digest)
            elif isinstance(public, ec.EllipticCurvePublicKey):
                public.verify(signature, data, ec.ECDSA(digest))
            else:
                public.verify(signature, data)
        except Exception as exc:  # cryptography's InvalidSignature
            raise ValueError(f"bad signature for {self.get_id()!r}") from exc


def load_pair(
    key: str, certificate: str, what: str, *, check: bool = True
) -> tuple[SigningKey, VerifyingCertificate]:
    """The signing key at ``key`` (``what`` names it in errors: a file others may read is
    refused) and the certificate at ``certificate``; ConfigError unless the certificate
    is the key's (``check``: the key's consistency too)."""
    check_private(key, what)
    try:
        signing = SigningKey(read_text(key, what, PEM_BYTES), check=check)
        verifying = VerifyingCertificate(read_text(certificate, "its certificate", PEM_BYTES))
    except ConfigError:
        raise
    except Exception as exc:  # cryptography's errors on a bad key or cert, a key type
        raise ConfigError(f"message signing: {key}, {certificate}: {exc}") from exc
    if check and not signing.matches(verifying):
        # every message it signed would be refused by its readers and lost as a dead letter
        raise ConfigError(
            f"message signing: {key} is not the key of {certificate}: give the certificate "
            "issued for this key (pipeline.security_key and security_certificate)"
        )
    return signing, verifying

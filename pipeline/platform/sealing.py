"""Outbox entries signed by the workers, verified by the flux-bridge.

The bridge acts on each outbox entry as the Flux instance owner (an
exception, a drain, a prolog released). With message signing on
(``pipeline.security_key``, ``security_certificate``, ``security_cert_store``),
a worker signs each entry it appends with the management key, over its
kind, jobid and payload; the bridge delivers only entries whose signature a
certificate of ``security_cert_store`` verifies. An entry written by anyone
else — pushed with ``redis-cli``, or by a node's key — is set aside as a dead
letter and never reaches Flux.
"""

from __future__ import annotations

import base64
import binascii
import glob
import os

from celery.security.utils import get_digest_algorithm

from pipeline.errors import ConfigError
from pipeline.model.files import PEM_BYTES, read_text
from pipeline.platform.signer_keys import SigningKey, VerifyingCertificate
from pipeline.settings import PipelineSettings
from pipeline.settings.secrets import check_private

DIGEST = get_digest_algorithm("sha256")


class KeySeal:
    """Signs with the process's key; accepts what a trusted certificate verifies."""

    def __init__(self, key: SigningKey, trusted: list[VerifyingCertificate]) -> None:
        self._key = key
        self._trusted = trusted

    def sign(self, data: bytes) -> str:
        """The base64 signature of ``data``."""
        return base64.b64encode(self._key.sign(data, DIGEST)).decode("ascii")

    def check(self, data: bytes, signature: str) -> str | None:
        """Why ``signature`` does not prove ``data``, or None."""
        try:
            raw = base64.b64decode(signature, validate=True)
        except (binascii.Error, ValueError):
            return "its signature is not base64"
        for certificate in self._trusted:
            try:
                certificate.verify(data, raw, DIGEST)
                return None
            except ValueError:  # not this certificate's (or it has expired)
                continue
        return "no trusted certificate verifies its signature"


def seal_of(pipeline: PipelineSettings) -> KeySeal | None:
    """The seal of a management process, or None when signing is off."""
    return seal_from(pipeline.security_key, pipeline.security_cert_store)


def seal_from(key_path: str | None, cert_store: str | None) -> KeySeal | None:
    """The seal of the key at ``key_path`` trusting ``cert_store``; None when unset."""
    if key_path is None or cert_store is None:
        return None
    check_private(key_path, "pipeline.security_key")
    pattern = os.path.join(cert_store, "*") if os.path.isdir(cert_store) else cert_store
    try:
        key = SigningKey(read_text(key_path, "pipeline.security_key", PEM_BYTES))
        trusted = [
            VerifyingCertificate(read_text(p, "a certificate", PEM_BYTES))
            for p in sorted(glob.glob(pattern))
        ]
    except ConfigError:
        raise
    except Exception as exc:  # cryptography's errors on a bad key or cert, a key type
        raise ConfigError(f"outbox signing: {exc}") from exc
    if not trusted:
        raise ConfigError(f"outbox signing: no certificate in {cert_store}")
    return KeySeal(key, trusted)

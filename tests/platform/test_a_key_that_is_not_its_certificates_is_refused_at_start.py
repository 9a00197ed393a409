"""A process given a signing key and a certificate that is not that key's refuses to start,
naming both files: every message it signed would be refused by its readers and lost as a
dead letter (a hook answered "success" and then lost its job's request)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.errors import ConfigError
from pipeline.platform.app import create_app
from pipeline.platform.pki import CertificateAuthority, make_ca
from pipeline.platform.signing import secure
from pipeline.settings import load_settings


def test_a_certificate_issued_for_another_key_is_refused(tmp_path: Path) -> None:
    ca = CertificateAuthority(*make_ca(tmp_path))
    store = tmp_path / "store"
    store.mkdir()
    key, _ = ca.issue(tmp_path, "management", key_type="ec")
    _, other = ca.issue(store, "other", key_type="ec")
    settings = load_settings(
        env={
            "CORAL2_PIPELINE_PIPELINE__SECURITY_KEY": str(key),
            "CORAL2_PIPELINE_PIPELINE__SECURITY_CERTIFICATE": str(other),
            "CORAL2_PIPELINE_PIPELINE__SECURITY_CERT_STORE": str(store),
        }
    )
    with pytest.raises(ConfigError, match=re.escape(f"{key} is not the key of {other}")):
        create_app(settings, set_current=False)  # which signs with them


def test_its_own_certificate_is_taken(tmp_path: Path) -> None:
    ca = CertificateAuthority(*make_ca(tmp_path))
    own, store = tmp_path / "own", tmp_path / "store"
    own.mkdir()
    store.mkdir()
    key, cert = ca.issue(own, "management", key_type="ec")
    (store / cert.name).write_bytes(cert.read_bytes())
    settings = load_settings(
        env={
            "CORAL2_PIPELINE_PIPELINE__SECURITY_KEY": str(key),
            "CORAL2_PIPELINE_PIPELINE__SECURITY_CERTIFICATE": str(cert),
            "CORAL2_PIPELINE_PIPELINE__SECURITY_CERT_STORE": str(store),
        }
    )
    app = create_app(settings, set_current=False)
    secure(app, settings.pipeline)  # again: it signs with them
    assert app.conf.task_serializer == "auth"

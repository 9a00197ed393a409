"""Signed task messages: Celery's ``auth`` serializer (``celery.security``), X.509 keys.

With ``pipeline.security_key``, ``security_certificate`` and
``security_cert_store`` set, a process signs every task message it sends
with its key and runs only messages whose signature verifies against a
certificate in its store; anything else — unsigned, signed by a key the
store does not hold, altered — is refused before it is decoded, and
nothing runs. Which keys each side holds and trusts is the site's
deployment (docs/security.md): the management side trusts itself and the
node workers (their answers); a node worker trusts only the management side.

Results stay plain JSON: nothing decides from a task's result.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from celery import Celery

from pipeline.errors import ConfigError
from pipeline.settings import PipelineSettings


def signing_config(pipeline: PipelineSettings) -> dict[str, Any]:
    """The Celery settings that make an app sign and verify, or nothing when signing is
    off."""
    if pipeline.security_key is None:
        return {}
    return {
        "task_serializer": "auth",
        "accept_content": ["auth"],
        "result_accept_content": ["json"],
        "security_key": pipeline.security_key,
        "security_certificate": pipeline.security_certificate,
        "security_cert_store": pipeline.security_cert_store,
        "security_digest": "sha256",
    }


def _check_key(path: str) -> None:
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ConfigError(f"pipeline.security_key {path!r}: {exc.strerror}") from exc
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"pipeline.security_key {path!r} can be read by other users "
            f"(mode {stat.S_IMODE(mode):o}); run: chmod 600 {path}"
        )


def secure(app: Celery, pipeline: PipelineSettings) -> None:
    """Register the ``auth`` serializer with the configured key and store (a process-wide
    registry, as Celery has it); refuse a key others can read or files that are missing."""
    if pipeline.security_key is None:
        return
    _check_key(pipeline.security_key)
    for name in ("security_certificate", "security_cert_store"):
        path = getattr(pipeline, name)
        if not Path(path).exists():
            raise ConfigError(f"pipeline.{name} {path!r}: No such file or directory")
    try:
        app.setup_security(allowed_serializers=["json"])  # auth is registered after
    except Exception as exc:  # cryptography's and celery's errors on a bad key or cert
        raise ConfigError(f"message signing: {exc}") from exc

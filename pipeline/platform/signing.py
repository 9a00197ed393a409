"""Signed task messages: Celery's ``auth`` serializer (``celery.security``), X.509 keys,
bound to the task they were made for and to what their signer may send.

With ``pipeline.security_key``, ``security_certificate`` and
``security_cert_store`` set, a process signs every task message it sends
with its key and runs only messages whose signature verifies against a
certificate it trusts; anything else — unsigned, signed by a key it does not
trust, altered — is refused before it is decoded, set aside as a dead letter,
and nothing runs.

Celery signs a message's body (its arguments), not its headers (the task
name and id): a signed body could be replayed under another task's name.
So each sender writes the task name and id it means into the signed body
(:func:`claim`, on ``before_task_publish``), and each worker's consumer
refuses a message whose signed claim differs from its headers
(:func:`refusal`) before the task strategy sees it.

Signers have roles. Certificates in ``security_cert_store`` may sign any
task; those in ``security_node_cert_store`` (the management side's store of
node workers' certificates) only a node's answers (:data:`NODE_ANSWERS`).
The deserializer records which one verified a message in the body, over
anything the body itself says. So a node key — root on any compute — can
report its own node work and nothing else: not a ``dws.create``, not a
``dws.teardown``, not another node's prolog.

Results stay plain JSON: nothing decides from a task's result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from celery import Celery
from celery.security.certificate import Certificate, FSCertStore
from celery.security.key import PrivateKey
from celery.security.serialization import SecureSerializer
from celery.security.utils import reraise_errors
from celery.signals import before_task_publish
from kombu.serialization import loads, registry

from pipeline.errors import ConfigError
from pipeline.settings import PipelineSettings
from pipeline.settings.secrets import check_private

#: What a sender claims in the signed body: ``{"task": name, "id": task id}``.
CLAIM = "coral2_claim"
#: The role of the certificate that verified the message, set by the deserializer.
SIGNER = "coral2_signer"
#: What a node worker's key may send: its answers to the node tasks it ran.
NODE_ANSWERS = frozenset({"job.prolog_done", "job.clientmount_done", "job.epilog_done"})
MANAGEMENT, NODE = "management", "node"


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


class RoleSerializer(SecureSerializer):  # type: ignore[misc]
    """Celery's signed serializer, verifying against several stores, each a role."""

    def __init__(self, key: Any, cert: Any, stores: list[tuple[str, Any]], digest: Any) -> None:
        super().__init__(key, cert, None, digest, serializer="json")
        self._stores = stores

    def _certificate(self, signer: bytes) -> tuple[str, Any]:
        for role, store in self._stores:
            try:
                return role, store[signer]
            except Exception:  # celery's SecurityError: not in this store
                continue
        raise ValueError(f"unknown certificate {signer!r}")

    def deserialize(self, data: Any) -> Any:
        with reraise_errors("Unable to deserialize: {0!r}", (Exception,)):
            payload = self._unpack(data)
            role, certificate = self._certificate(payload["signer"])
            certificate.verify(payload["body"], payload["signature"], self._digest)
        body = loads(  # type: ignore[no-untyped-call]
            payload["body"], payload["content_type"], payload["content_encoding"], force=True
        )
        if isinstance(body, list | tuple) and len(body) == 3 and isinstance(body[2], dict):
            body = [body[0], body[1], {**body[2], SIGNER: role}]
        return body


def claim(body: Any = None, headers: Any = None, **_: Any) -> None:
    """``before_task_publish``: write the task's name and id into the body to be signed."""
    if isinstance(headers, dict) and isinstance(body, list | tuple) and len(body) == 3:
        embed = body[2]
        if isinstance(embed, dict):
            embed[CLAIM] = {"task": headers.get("task"), "id": headers.get("id")}


def refusal(message: Any) -> str | None:
    """Why a signed message must not run, or None. A message that cannot be decoded is
    left to Celery's own refusal (None here)."""
    headers = message.headers if isinstance(message.headers, dict) else {}
    try:
        _args, _kwargs, embed = message.decode()
    except Exception:  # Celery refuses it next, with its own reason
        return None
    if not isinstance(embed, dict):
        return "its body holds no claim of the task it was signed for"
    name = headers.get("task")
    said = embed.get(CLAIM)
    if said != {"task": name, "id": headers.get("id")}:
        return f"its signature was made for {said!r}, not for {name!r} {headers.get('id')!r}"
    role = embed.get(SIGNER)
    if role == NODE and name not in NODE_ANSWERS:
        return f"a node's key may sign only {sorted(NODE_ANSWERS)}, not {name!r}"
    if role not in (MANAGEMENT, NODE):
        return "no trusted certificate verified it"
    return None


def signed(app: Celery) -> bool:
    """Whether ``app`` runs signed messages only."""
    return bool(app.conf.task_serializer == "auth")


def secure(app: Celery, pipeline: PipelineSettings) -> None:
    """Register the ``auth`` serializer with the configured key and stores (a process-wide
    registry, as Celery has it); refuse a key others can read or files that are missing."""
    if pipeline.security_key is None:
        return
    check_private(pipeline.security_key, "pipeline.security_key")
    stores = [("security_cert_store", MANAGEMENT), ("security_node_cert_store", NODE)]
    for name in ("security_certificate", "security_cert_store", "security_node_cert_store"):
        path = getattr(pipeline, name)
        if path is not None and not Path(path).exists():
            raise ConfigError(f"pipeline.{name} {path!r}: No such file or directory")
    try:
        app.setup_security(allowed_serializers=["json"])  # checks, disables pickle & co.
        serializer = RoleSerializer(
            PrivateKey(Path(pipeline.security_key).read_text()),
            Certificate(Path(str(pipeline.security_certificate)).read_text()),
            [
                (role, FSCertStore(getattr(pipeline, name)))
                for name, role in stores
                if getattr(pipeline, name) is not None
            ],
            app.conf.security_digest,
        )
    except Exception as exc:  # cryptography's and celery's errors on a bad key or cert
        raise ConfigError(f"message signing: {exc}") from exc
    registry.register(  # type: ignore[no-untyped-call]
        "auth",
        serializer.serialize,
        serializer.deserialize,
        content_type="application/data",
        content_encoding="utf-8",
    )
    before_task_publish.connect(claim, weak=False, dispatch_uid="coral2-pipeline-claim")

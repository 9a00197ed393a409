"""Signed task messages: Celery's ``auth`` envelope (``celery.security``), X.509 keys,
bound to the task they were made for and to who their signer is.

With ``pipeline.security_key``, ``security_certificate`` and
``security_cert_store`` set, a process signs every task message it sends
with its key and runs only messages whose signature verifies against a
certificate it trusts; anything else is set aside as a dead letter with
its raw bytes and the signer it claimed, and nothing of it runs.

**Nothing is decoded before it is trusted.** :class:`StrictSerializer`
reads the envelope (base64 and a separator, no deserializer), finds the
certificate the envelope names, verifies the signature over the body's
bytes, and only then accepts the body — and only JSON in Celery's
protocol-2 shape ``[args, kwargs, embed]`` (a list, a dict, a dict), or a
remote-control command or its reply (a JSON object) signed by the management
side: ``celery inspect`` and ``control`` work with the management key, and
no node's key and no unsigned sender (Flower holds no key) can command a
worker. Every other content type (pickle, yaml, msgpack), shape (protocol 1,
"hybrid" bodies) or encoding is refused before any deserializer runs,
whoever signed it. Celery's own ``SecureSerializer`` decodes whatever content type the
signed envelope names (``force=True``), so a body signed by any trusted key
could run pickle.

**Every signer has a role and a name**, known before the task is looked up.
Certificates in ``security_cert_store`` are the management side's: they may
sign any task. Certificates in ``security_node_cert_store`` (the management
side's store of node certificates, one per node, issued by the site CA with
the node's hostname as common name, ``coral2-pipeline node-cert``) may sign
only a node's answers (:data:`NODE_ANSWERS`), and only for the node their
certificate names: compute63's key cannot answer for compute05. The
deserializer writes the role and the name into the body, over anything the
body itself says.

Celery signs a message's body (its arguments), not its headers (the task
name and id): a signed body could be replayed under another task's name. So
each sender writes the task name and id it means into the signed body
(:func:`claim`, on ``before_task_publish``), and each worker's consumer
refuses a message whose signed claim differs from its headers
(:func:`refusal`) before the task strategy sees it. A job's node task on many
nodes is signed once, as a manifest (``pipeline.platform.fanout``): its claim
also names the nodes (:data:`NODES`, a hostlist), and each node's copy carries
the id ``<manifest id>:<node>`` (:func:`manifest_host`).

Results stay plain JSON: nothing decides from a task's result.
"""

from __future__ import annotations

import base64
import binascii
import glob
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from celery import Celery
from celery.security.utils import get_digest_algorithm
from celery.signals import before_task_publish
from cryptography import x509
from cryptography.x509.oid import NameOID
from kombu.serialization import disable_insecure_serializers, registry
from kombu.utils.json import dumps, loads

from pipeline.errors import ConfigError, HostlistError
from pipeline.model.files import PEM_BYTES, read_text
from pipeline.model.hostlist import expand_hostlist
from pipeline.platform.signer_keys import SigningKey, VerifyingCertificate, load_pair
from pipeline.settings import PipelineSettings

#: What a sender claims in the signed body: ``{"task": name, "id": task id}``.
CLAIM = "coral2_claim"
#: What a manifest's claim adds: the nodes it is for, as a hostlist (``pipeline.platform.fanout``).
NODES = "nodes"
#: The tasks a manifest may carry: a node's.
NODE_TASK_PREFIX = "node."
#: Separates a manifest's id from the node in each copy's task id.
COPY_SEPARATOR = ":"
#: The role of the certificate that verified the message, set by the deserializer.
SIGNER = "coral2_signer"
#: The common name of that certificate (a node's hostname), set by the deserializer.
SIGNER_NAME = "coral2_signer_name"
#: What a node worker's key may send: its answers to the node tasks it ran.
NODE_ANSWERS = frozenset({"job.prolog_done", "job.clientmount_done", "job.epilog_done"})
MANAGEMENT, NODE = "management", "node"
#: The only body a signed envelope may carry.
JSON, UTF8 = "application/json", "utf-8"
#: Celery's separator between the envelope's fields.
SEPARATOR = b"\x00\x01"
#: The placeholder of a multi-node worker's key paths (one key per node it serves).
HOST = "{host}"


class Refused(ValueError):
    """Raised when a signed envelope is not one this process may decode."""


@dataclass(frozen=True)
class Envelope:
    """The fields of Celery's ``auth`` envelope, read without deserializing anything."""

    signer: str
    signature: bytes
    content_type: str
    content_encoding: str
    body: bytes


def unpack(data: Any) -> Envelope:
    """Read the envelope of ``data`` (base64 of five fields); :class:`Refused` if it is
    none."""
    try:
        raw = base64.b64decode(data.encode("ascii") if isinstance(data, str) else bytes(data))
        fields = raw.split(SEPARATOR, 4)
        if len(fields) != 5:
            raise Refused("not a signed envelope (five fields, Celery's auth serializer)")
        signer = base64.b64decode(fields[0]).decode("utf-8")
        return Envelope(
            signer=signer,
            signature=base64.b64decode(fields[1]),
            content_type=fields[2].decode("ascii"),
            content_encoding=fields[3].decode("ascii"),
            body=fields[4],
        )
    except (binascii.Error, UnicodeError, TypeError, ValueError) as exc:
        if isinstance(exc, Refused):
            raise
        raise Refused(f"not a signed envelope: {exc}") from exc


def claimed_signer(data: Any) -> str | None:
    """The signer an envelope names, trusted or not (for a dead letter); None if none."""
    try:
        return unpack(data).signer
    except Refused:
        return None


@dataclass(frozen=True)
class Trusted:
    """A certificate this process trusts, with its role and its common name."""

    role: str
    name: str
    certificate: VerifyingCertificate


def common_name(certificate: x509.Certificate) -> str:
    """The certificate's subject common name ('' when it has none)."""
    names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else ""


class TrustStore:
    """The certificates a process trusts, by Celery's signer id (issuer and serial)."""

    def __init__(self) -> None:
        self._by_id: dict[str, Trusted] = {}

    def add_directory(self, path: str, role: str, ca: x509.Certificate | None = None) -> None:
        """Trust every PEM certificate of directory ``path`` for ``role``; with ``ca``,
        each must be issued by it. An expired certificate, one the CA did not issue, or a
        file that is no certificate stops the process with the file's name."""
        pattern = os.path.join(path, "*") if os.path.isdir(path) else path
        for file in sorted(glob.glob(pattern)):
            try:
                cert = VerifyingCertificate(read_text(file, "certificate", PEM_BYTES))
            except ConfigError:
                raise
            except Exception as exc:  # cryptography's errors on a bad PEM, a key type
                raise ConfigError(f"{file}: not a PEM certificate: {exc}") from exc
            if cert.has_expired():
                raise ConfigError(f"{file}: the certificate has expired; issue a new one")
            if ca is not None:
                try:
                    cert.x509.verify_directly_issued_by(ca)
                except Exception as exc:  # cryptography: wrong issuer, bad signature
                    raise ConfigError(
                        f"{file}: not issued by the site CA (pipeline.site_ca_certificate): "
                        f"{exc or type(exc).__name__}"
                    ) from exc
            self._by_id[cert.get_id()] = Trusted(role, common_name(cert.x509), cert)

    def find(self, signer: str) -> Trusted | None:
        """The trusted certificate of ``signer`` (an envelope's signer id), or None."""
        return self._by_id.get(signer)

    def names(self, role: str) -> list[str]:
        """The names of the certificates trusted for ``role``, sorted."""
        return sorted(t.name for t in self._by_id.values() if t.role == role)


class StrictSerializer:
    """Celery's ``auth`` envelope, verified before anything is decoded (module docstring).

    ``keys`` maps a node's hostname to its key and certificate, for a worker that serves
    several nodes: an answer is signed by the key of the node it names. Anything else is
    signed by ``default``."""

    def __init__(
        self,
        default: tuple[SigningKey, VerifyingCertificate],
        trust: TrustStore,
        digest: str,
        keys: Mapping[str, tuple[SigningKey, VerifyingCertificate]] | None = None,
    ) -> None:
        self._default = default
        self._keys = dict(keys or {})
        self._trust = trust
        self._digest = get_digest_algorithm(digest)

    def _signing_key(self, data: Any) -> tuple[SigningKey, VerifyingCertificate]:
        if self._keys and isinstance(data, list | tuple) and len(data) == 3:
            kwargs = data[1]
            node = kwargs.get("node") if isinstance(kwargs, dict) else None
            if isinstance(node, str) and node in self._keys:
                return self._keys[node]
        return self._default

    def serialize(self, data: Any) -> str:
        key, cert = self._signing_key(data)
        body = dumps(data).encode(UTF8)  # type: ignore[no-untyped-call]
        fields = [
            base64.b64encode(cert.get_id().encode(UTF8)),
            base64.b64encode(key.sign(body, self._digest)),
            JSON.encode(),
            UTF8.encode(),
            body,
        ]
        return base64.b64encode(SEPARATOR.join(fields)).decode("ascii")

    def deserialize(self, data: Any) -> Any:
        envelope = unpack(data)
        trusted = self._trust.find(envelope.signer)
        if trusted is None:
            raise Refused(
                f"signed by {envelope.signer!r}, a certificate this process does not trust"
            )
        try:
            trusted.certificate.verify(envelope.body, envelope.signature, self._digest)
        except ValueError as exc:  # a bad signature, an expired certificate
            raise Refused(f"its signature does not verify against {envelope.signer!r}") from exc
        who = trusted.name or envelope.signer
        if envelope.content_type != JSON or envelope.content_encoding != UTF8:
            raise Refused(
                f"{who!r} signed a body of content type "
                f"{envelope.content_type!r} ({envelope.content_encoding!r}); only "
                f"{JSON} in {UTF8} is accepted"
            )
        try:
            body = loads(envelope.body.decode(UTF8))  # type: ignore[no-untyped-call]
        except (UnicodeError, ValueError) as exc:
            raise Refused(f"the body {who!r} signed is not JSON: {exc}") from exc
        if isinstance(body, dict) and trusted.role == MANAGEMENT:
            return body  # a remote-control command or its reply (a task is refused later)
        if not (
            isinstance(body, list)
            and len(body) == 3
            and isinstance(body[0], list)
            and isinstance(body[1], dict)
            and isinstance(body[2], dict)
        ):
            raise Refused(not_protocol_2(who))
        embed = {**body[2], SIGNER: trusted.role, SIGNER_NAME: trusted.name}
        return [body[0], body[1], embed]


def not_protocol_2(who: str) -> str:
    """Why a task body of another shape is refused."""
    return (
        f"the body {who!r} signed is not Celery's protocol-2 [args, kwargs, embed] "
        "(protocol 1 and other shapes are refused)"
    )


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


def claim(body: Any = None, headers: Any = None, **_: Any) -> None:
    """``before_task_publish``: write the task's name and id into the body to be signed."""
    if isinstance(headers, dict) and isinstance(body, list | tuple) and len(body) == 3:
        embed = body[2]
        if isinstance(embed, dict):
            embed[CLAIM] = {"task": headers.get("task"), "id": headers.get("id")}


def refusal(message: Any) -> str | None:
    """Why a signed message must not run, or None. Read before its task is looked up."""
    headers = message.headers if isinstance(message.headers, dict) else {}
    try:
        body = message.decode()
    except Exception as exc:  # the serializer's Refused, kombu's ContentDisallowed, ...
        return f"cannot decode it ({message.content_type}): {exc}"
    if not isinstance(body, list):  # a JSON object the management key signed
        who = claimed_signer(message.body) or MANAGEMENT
        return f"cannot decode it ({message.content_type}): {not_protocol_2(who)}"
    _args, kwargs, embed = body
    name = headers.get("task")
    said = embed.get(CLAIM)
    role, signer = embed.get(SIGNER), embed.get(SIGNER_NAME)
    if isinstance(said, dict) and NODES in said:
        return _manifest_refusal(said, name, headers.get("id"), role, kwargs)
    if said != {"task": name, "id": headers.get("id")}:
        return f"its signature was made for {said!r}, not for {name!r} {headers.get('id')!r}"
    if role == MANAGEMENT:
        return None
    if role != NODE:
        return "no trusted certificate verified it"
    if name not in NODE_ANSWERS:
        return f"{signer}'s node key may sign only {sorted(NODE_ANSWERS)}, not {name!r}"
    node = kwargs.get("node")
    if node != signer:
        return f"{signer}'s key signed an answer for node {node!r}: a node speaks only for itself"
    return None


def _manifest_refusal(
    said: dict[str, Any], name: Any, task_id: Any, role: Any, kwargs: dict[str, Any]
) -> str | None:
    """Why a copy of a signed manifest must not run, or None: the management side signed
    it, for a node task, without a hostname in its arguments, and the copy's id names a
    node of the manifest (:func:`manifest_host`)."""
    if role != MANAGEMENT:
        return "only the management key may sign a manifest of node tasks"
    if said.get("task") != name or not str(name).startswith(NODE_TASK_PREFIX):
        return f"its signature was made for a manifest of {said.get('task')!r}, not {name!r}"
    if "hostname" in kwargs:
        return "a manifest names its nodes in its claim, never in its arguments"
    if manifest_host(task_id, said) is None:
        return (
            f"its signature was made for manifest {said.get('id')!r} to "
            f"{said.get(NODES)!r}, not for {task_id!r}"
        )
    return None


@lru_cache(maxsize=8)
def _manifest_nodes(hostlist: str) -> frozenset[str]:
    try:
        return frozenset(expand_hostlist(hostlist))
    except HostlistError:
        return frozenset()


def manifest_host(task_id: Any, claim: Any) -> str | None:
    """The node a copy of a manifest is for: the part of its id after the manifest's id
    and :data:`COPY_SEPARATOR`, when the manifest's claim names that node; else None."""
    if not isinstance(task_id, str) or not isinstance(claim, dict):
        return None
    manifest_id, nodes = claim.get("id"), claim.get(NODES)
    if not isinstance(manifest_id, str) or not isinstance(nodes, str):
        return None
    lead = manifest_id + COPY_SEPARATOR
    if not task_id.startswith(lead):
        return None
    host = task_id[len(lead) :]
    return host if host in _manifest_nodes(nodes) else None


def signed(app: Celery) -> bool:
    """Whether ``app`` runs signed messages only."""
    return bool(app.conf.task_serializer == "auth")


def _load_ca(pipeline: PipelineSettings) -> x509.Certificate | None:
    if pipeline.site_ca_certificate is None:
        return None
    pem = read_text(pipeline.site_ca_certificate, "pipeline.site_ca_certificate", PEM_BYTES)
    try:
        return x509.load_pem_x509_certificate(pem.encode())
    except ValueError as exc:
        raise ConfigError(f"pipeline.site_ca_certificate: {exc}") from exc


def secure(
    app: Celery, pipeline: PipelineSettings, *, hosts: Iterable[str] = (), node: bool = False
) -> None:
    """Register the ``auth`` serializer with the configured key and stores (a process-wide
    registry, as Celery has it); refuse a key others can read or files that are missing.

    ``node``: a node worker, which trusts the management side's certificates alone (never
    ``security_node_cert_store``: a node runs nothing another node signed). ``hosts``: the
    nodes it serves; a key path holding ``{host}`` names one key per node."""
    if pipeline.security_key is None:
        return
    for name in ("security_cert_store", "security_node_cert_store"):
        path = getattr(pipeline, name)
        if path is not None and not Path(path).exists():
            raise ConfigError(f"pipeline.{name} {path!r}: No such file or directory")
    key, cert = pipeline.security_key, str(pipeline.security_certificate)
    keys: dict[str, tuple[SigningKey, VerifyingCertificate]] = {}
    if HOST in key or HOST in cert:
        hosts = list(hosts)
        if not hosts:
            raise ConfigError(
                f"pipeline.security_key {key!r} names a key per node ({HOST}); only a node "
                "worker given its hostnames can use it"
            )
        for host in hosts:  # a worker of many nodes is the simulator's: keys of its own making
            keys[host] = load_pair(
                key.replace(HOST, host),
                cert.replace(HOST, host),
                "pipeline.security_key",
                check=len(hosts) == 1,
            )
        default = keys[hosts[0]]
    else:
        default = load_pair(key, cert, "pipeline.security_key")
    trust = TrustStore()
    trust.add_directory(str(pipeline.security_cert_store), MANAGEMENT)
    if pipeline.security_node_cert_store is not None and not node:
        trust.add_directory(pipeline.security_node_cert_store, NODE, _load_ca(pipeline))
    if app.conf.task_serializer != "auth" or list(app.conf.accept_content) != ["auth"]:
        raise ConfigError("message signing needs task_serializer auth and accept_content [auth]")
    serializer = StrictSerializer(default, trust, app.conf.security_digest, keys)
    registry.register(  # type: ignore[no-untyped-call]
        "auth",
        serializer.serialize,
        serializer.deserialize,
        content_type="application/data",
        content_encoding="utf-8",
    )
    # what Celery's setup_security does, with keys of any type: no decoder but JSON and
    # ours for the process (pickle & co. are refused), signed messages only
    disable_insecure_serializers(allowed=["json", "auth"])  # type: ignore[no-untyped-call]
    before_task_publish.connect(claim, weak=False, dispatch_uid="coral2-pipeline-claim")

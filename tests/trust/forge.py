"""What an attacker who holds one compute node crafts: a task message signed with a key it
holds, any content type and body shape, pushed raw onto a queue (or appended to the answers
stream) with a Redis user it holds.

The envelope is Celery's ``auth`` one, packed by hand (as an attacker would, not through
our serializer); the kombu message around it is the JSON kombu's Redis transport reads.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes

from pipeline.platform.signer_keys import SigningKey, VerifyingCertificate

SEPARATOR = b"\x00\x01"


def envelope(key: Path, cert: Path, body: bytes, content_type: str, encoding: str) -> str:
    """``body`` signed with ``key`` (any kind our signer takes), as Celery's auth
    serializer packs it, with whatever content type the signer names."""
    private = SigningKey(key.read_text())
    signer = VerifyingCertificate(cert.read_text()).get_id().encode()
    fields = [
        base64.b64encode(signer),
        base64.b64encode(private.sign(body, hashes.SHA256())),
        content_type.encode(),
        encoding.encode(),
        body,
    ]
    return base64.b64encode(SEPARATOR.join(fields)).decode()


def forge(
    key: Path,
    cert: Path,
    name: str,
    queue: str,
    body: Callable[[dict[str, Any]], bytes],
    *,
    content_type: str = "application/json",
    proto1: bool = False,
    task_id: str | None = None,
    claim: dict[str, Any] | None = None,
) -> bytes:
    """The kombu message (JSON) of task ``name`` on ``queue``, its body made by ``body``
    from the claim a sender writes into it (task name and id, or ``claim``) and signed
    with ``key``, under ``task_id`` (a new one by default); with ``proto1``, headers
    without the task name, as Celery's protocol 1 sends them."""
    task_id = task_id or str(uuid.uuid4())
    if claim is None:
        claim = {"task": None if proto1 else name, "id": None if proto1 else task_id}
    payload = envelope(key, cert, body(claim), content_type, "utf-8")
    headers: dict[str, Any] = {}
    if not proto1:
        headers = {
            "lang": "py",
            "task": name,
            "id": task_id,
            "root_id": task_id,
            "parent_id": None,
            "group": None,
            "retries": 0,
            "eta": None,
            "expires": None,
            "ignore_result": True,
            "argsrepr": "()",
            "kwargsrepr": "{}",
            "origin": "attacker",
        }
    return json.dumps(
        {
            "body": base64.b64encode(payload.encode()).decode(),
            "content-encoding": "utf-8",
            "content-type": "application/data",
            "headers": headers,
            "properties": {
                "correlation_id": task_id,
                "reply_to": "",
                "delivery_mode": 2,
                "delivery_info": {"exchange": "", "routing_key": queue},
                "priority": 0,
                "body_encoding": "base64",
                "delivery_tag": str(uuid.uuid4()),
            },
        }
    ).encode()


def forge_answer(
    key: Path,
    cert: Path,
    name: str,
    body: Callable[[dict[str, Any]], bytes],
    *,
    content_type: str = "application/json",
    claim: dict[str, Any] | None = None,
) -> dict[str, str]:
    """The answers-stream entry of ``name`` (what a node worker appends with ``XADD``), its
    body made by ``body`` from the claim (or ``claim``) and signed with ``key``."""
    task_id = str(uuid.uuid4())
    claim = {"task": name, "id": task_id} if claim is None else claim
    payload = envelope(key, cert, body(claim), content_type, "utf-8")
    return {"task": name, "id": task_id, "ct": "application/data", "ce": "utf-8", "body": payload}


def protocol2(kwargs: dict[str, Any]) -> Callable[[dict[str, Any]], bytes]:
    """A JSON protocol-2 body ``[[], kwargs, embed]`` with the sender's claim."""

    def make(claim: dict[str, Any]) -> bytes:
        embed = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
        return json.dumps([[], kwargs, {**embed, "coral2_claim": claim}]).encode()

    return make

"""With signing on, an entry of the answers stream is read as the worker's consumer reads a
task message: a node's own answer, signed with its key, is decoded; an answer it signed for
another node, a task that is no node answer, a body signed for another entry, an unsigned
body and one signed by a key nobody trusts are each refused with why, before anything of
them is decoded."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from coral2_sim.keys import Signer, demo_signers, key_pair
from kombu.serialization import registry

from pipeline.platform.answers import Answer, Unreadable, decode
from pipeline.platform.app import create_app
from pipeline.platform.signer_keys import SigningKey, VerifyingCertificate
from pipeline.platform.signing import CLAIM, StrictSerializer, TrustStore
from pipeline.settings import load_settings


@pytest.fixture(scope="module")
def signers(tmp_path_factory: pytest.TempPathFactory) -> tuple[Signer, Signer]:
    return demo_signers(tmp_path_factory.mktemp("keys"), ["n1", "n2"])


@pytest.fixture
def app(signers: tuple[Signer, Signer], redis_url: str) -> Iterator[Celery]:
    """The lifecycle side's app; the process-wide serializers it registers are put back."""
    saved = {k: copy.copy(v) for k, v in vars(registry).items()}
    env = {"CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_url, **signers[0].env()}
    yield create_app(load_settings(env=env), set_current=False)
    for key, value in saved.items():
        setattr(registry, key, value)


def entry(
    key: str | Path, cert: str | Path, name: str, kwargs: dict[str, Any], claim_id: str = ""
) -> dict[bytes, bytes]:
    """The entry a node worker holding ``key`` appends (its claim naming ``claim_id``)."""
    task_id = str(uuid.uuid4())
    pair = (SigningKey(Path(key).read_text()), VerifyingCertificate(Path(cert).read_text()))
    body = [[], kwargs, {CLAIM: {"task": name, "id": claim_id or task_id}}]
    envelope = StrictSerializer(pair, TrustStore(), "sha256").serialize(body)
    fields = {"task": name, "id": task_id, "ct": "application/data", "ce": "utf-8"}
    return {k.encode(): v.encode() for k, v in {**fields, "body": envelope}.items()}


def node_key(signers: tuple[Signer, Signer], host: str) -> tuple[str, str]:
    node = signers[1].of(host)
    return str(node.key), str(node.certificate)


ANSWER = {"jobid": 5, "node": "n1", "task_id": "t"}


def test_a_nodes_own_answer_is_decoded(app: Celery, signers: tuple[Signer, Signer]) -> None:
    decoded = decode(app, "1-0", entry(*node_key(signers, "n1"), "job.prolog_done", ANSWER))
    assert decoded == Answer("1-0", "job.prolog_done", ANSWER)


def test_a_node_cannot_answer_for_another(app: Celery, signers: tuple[Signer, Signer]) -> None:
    decoded = decode(app, "1-0", entry(*node_key(signers, "n2"), "job.prolog_done", ANSWER))
    assert isinstance(decoded, Unreadable)
    assert "a node speaks only for itself" in decoded.reason


def test_only_node_answers_are_read(app: Celery, signers: tuple[Signer, Signer]) -> None:
    for key in (node_key(signers, "n1"), (signers[0].key, signers[0].certificate)):
        decoded = decode(app, "1-0", entry(*key, "dws.teardown", {"jobid": 5}))
        assert isinstance(decoded, Unreadable)
        assert decoded.reason == "'dws.teardown' is not a node answer"


def test_a_body_signed_for_another_entry_is_refused(
    app: Celery, signers: tuple[Signer, Signer]
) -> None:
    fields = entry(*node_key(signers, "n1"), "job.prolog_done", ANSWER, claim_id="other")
    decoded = decode(app, "1-0", fields)
    assert isinstance(decoded, Unreadable) and "signature was made for" in decoded.reason


def test_unsigned_and_untrusted_bodies_are_refused(
    app: Celery, signers: tuple[Signer, Signer], tmp_path: Path
) -> None:
    plain = {b"task": b"job.prolog_done", b"id": b"i", b"ct": b"application/json"}
    plain |= {b"ce": b"utf-8", b"body": b'[[], {"jobid": 5, "node": "n1"}, {}]'}
    unsigned = decode(app, "1-0", plain)
    assert isinstance(unsigned, Unreadable) and "untrusted content" in unsigned.reason
    rogue = decode(app, "1-0", entry(*key_pair(tmp_path, "n1"), "job.prolog_done", ANSWER))
    assert isinstance(rogue, Unreadable) and "does not trust" in rogue.reason

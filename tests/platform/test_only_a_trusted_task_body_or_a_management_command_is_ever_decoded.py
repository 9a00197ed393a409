"""Over every message shape (protocol 2, protocol 1, hybrids, other JSON), every content
type the envelope may name, and each role's key (management, a node, a key nobody
trusts): the signed serializer hands a body on only when a trusted key signed a JSON
protocol-2 body, stamped with that key's role and name, or when the management key
signed a JSON object (a remote-control command or its reply, which the task consumer
then refuses as a task); everything else is refused before any deserializer runs. And
a node's answer passes the consumer's check only for the node its key names."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from coral2_sim.keys import demo_signers, key_pair
from cryptography.hazmat.primitives import hashes
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.platform.signer_keys import SigningKey, VerifyingCertificate
from pipeline.platform.signing import (
    CLAIM,
    MANAGEMENT,
    NODE,
    NODE_ANSWERS,
    SIGNER,
    SIGNER_NAME,
    Refused,
    StrictSerializer,
    TrustStore,
    refusal,
)

CONTENT_TYPES = [
    "application/json",
    "application/x-python-serialize",
    "application/x-yaml",
    "application/x-msgpack",
    "application/data",
    "text/plain",
]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
PROTO2 = st.tuples(
    st.lists(JSON_VALUES, max_size=2),
    st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=3),
    st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=3),
).map(list)
SHAPES = (
    PROTO2
    | JSON_VALUES
    | st.fixed_dictionaries(
        {"task": st.just("dws.create"), "args": st.just([]), "kwargs": st.just({})}
    )
)


@pytest.fixture(scope="module")
def signers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    directory = tmp_path_factory.mktemp("keys")
    management, node = demo_signers(directory, ["compute05"])
    rogue = key_pair(directory, "rogue")
    one = node.of("compute05")
    return {
        MANAGEMENT: (Path(management.key), Path(management.certificate)),
        NODE: (Path(one.key), Path(one.certificate)),
        "untrusted": rogue,
        "_stores": (management.store, management.answers or management.store),
    }


@pytest.fixture(scope="module")
def serializer(signers: dict[str, tuple[Path, Path]]) -> StrictSerializer:
    trust = TrustStore()
    trust.add_directory(str(signers["_stores"][0]), MANAGEMENT)
    trust.add_directory(str(signers["_stores"][1]), NODE)
    key, cert = signers[MANAGEMENT]
    pair = (SigningKey(key.read_text()), VerifyingCertificate(cert.read_text()))
    return StrictSerializer(pair, trust, "sha256")


def envelope(key: Path, cert: Path, body: bytes, content_type: str) -> str:
    signer = VerifyingCertificate(cert.read_text()).get_id().encode()
    signature = SigningKey(key.read_text()).sign(body, hashes.SHA256())
    fields = [base64.b64encode(signer), base64.b64encode(signature), content_type.encode()]
    return base64.b64encode(b"\x00\x01".join([*fields, b"utf-8", body])).decode()


def is_proto2(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 3
        and isinstance(value[0], list)
        and isinstance(value[1], dict)
        and isinstance(value[2], dict)
    )


@settings(max_examples=150, deadline=None)
@given(
    shape=SHAPES,
    content_type=st.sampled_from(CONTENT_TYPES),
    role=st.sampled_from([MANAGEMENT, NODE, "untrusted"]),
)
def test_a_body_is_handed_on_only_when_trusted_json_protocol_2_or_a_management_object(
    serializer: StrictSerializer,
    signers: dict[str, tuple[Path, Path]],
    shape: Any,
    content_type: str,
    role: str,
) -> None:
    key, cert = signers[role]
    data = envelope(key, cert, json.dumps(shape).encode(), content_type)
    json_body = content_type == "application/json"
    command = role == MANAGEMENT and json_body and isinstance(shape, dict)
    expected = role != "untrusted" and json_body and is_proto2(shape)
    if command:
        assert serializer.deserialize(data) == shape
        return
    if not expected:
        with pytest.raises(Refused):
            serializer.deserialize(data)
        return
    args, kwargs, embed = serializer.deserialize(data)
    assert [args, kwargs] == shape[:2]
    assert embed[SIGNER] == role
    assert embed[SIGNER_NAME] == ("compute05" if role == NODE else "coral2-pipeline management")


class Delivered:
    """What the consumer's check reads of a delivered message: its headers and body."""

    def __init__(self, name: str, body: list[Any]) -> None:
        self.headers = {"task": name, "id": "t1"}
        self.content_type = "application/data"
        self._body = body

    def decode(self) -> list[Any]:
        return self._body


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from([*sorted(NODE_ANSWERS), "dws.create", "dws.teardown", "job.run"]),
    node=st.sampled_from(["compute05", "compute06", None]),
)
def test_a_node_key_passes_only_with_its_own_answers(name: str, node: str | None) -> None:
    embed = {CLAIM: {"task": name, "id": "t1"}, SIGNER: NODE, SIGNER_NAME: "compute05"}
    kwargs = {"jobid": 1} if node is None else {"jobid": 1, "node": node}
    problem = refusal(Delivered(name, [[], kwargs, embed]))
    assert (problem is None) == (name in NODE_ANSWERS and node == "compute05"), problem

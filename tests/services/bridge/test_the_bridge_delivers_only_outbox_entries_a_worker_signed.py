"""With signing on, a worker signs every outbox entry it appends with the management key,
and the bridge — which acts on each as the Flux instance owner — delivers only entries a
trusted certificate verifies. An entry pushed with ``redis-cli``, one signed by a node's
key, and one whose payload was changed after signing are set aside, never delivered."""

from __future__ import annotations

from pathlib import Path

import pytest
from coral2_sim.keys import demo_signers

from pipeline.platform.sealing import KeySeal, seal_from
from pipeline.services.bridge.delivery import Deliverer
from pipeline.store import Store
from pipeline.store.outbox import OutboxMessage, sealed_bytes
from tests.services.bridge.recording_flux import RecordingFlux


@pytest.fixture(scope="module")
def seals(tmp_path_factory: pytest.TempPathFactory) -> tuple[KeySeal, KeySeal]:
    management, node = demo_signers(tmp_path_factory.mktemp("keys"))
    ours = seal_from(str(management.key), str(management.store))
    theirs = seal_from(str(node.of("compute01").key), str(node.store))
    assert ours is not None and theirs is not None
    return ours, theirs


def signed_store(store: Store, seal: KeySeal) -> Store:
    return Store(store.client, store.keys, seal)


def deliver(store: Store, seal: KeySeal) -> RecordingFlux:
    flux = RecordingFlux()
    Deliverer(signed_store(store, seal).outbox, flux, "c1", lambda h: h).run_once()
    return flux


def test_an_entry_a_worker_signed_is_delivered(
    store: Store, seals: tuple[KeySeal, KeySeal]
) -> None:
    ours, _ = seals
    signed_store(store, ours).outbox.append(OutboxMessage("epilog-remove", 5, {"id": 5}))
    assert deliver(store, ours).rpcs == [("job-manager.dws.epilog-remove", {"id": 5})]
    assert store.dead_letters.counts() == (0, 0)


def test_an_unsigned_entry_is_set_aside(store: Store, seals: tuple[KeySeal, KeySeal]) -> None:
    ours, _ = seals
    store.client.xadd(store.keys.outbox, {"kind": "drain", "jobid": "", "payload": "{}"})
    assert deliver(store, ours).rpcs == []
    [letter] = store.dead_letters.latest(1)
    assert "not signed" in letter.reason


def test_an_entry_signed_by_a_node_key_is_set_aside(
    store: Store, seals: tuple[KeySeal, KeySeal]
) -> None:
    ours, node = seals
    payload = '{"targets":"n1","reason":"forged"}'
    signature = node.sign(sealed_bytes("drain", "", payload))
    fields = {"kind": "drain", "jobid": "", "payload": payload, "sig": signature}
    store.client.xadd(store.keys.outbox, fields)
    assert deliver(store, ours).rpcs == []
    [letter] = store.dead_letters.latest(1)
    assert "no trusted certificate" in letter.reason


def test_an_entry_changed_after_signing_is_set_aside(
    store: Store, seals: tuple[KeySeal, KeySeal]
) -> None:
    ours, _ = seals
    signature = ours.sign(sealed_bytes("epilog-remove", "5", '{"id":5}'))
    fields = {"kind": "epilog-remove", "jobid": "6", "payload": '{"id":6}', "sig": signature}
    store.client.xadd(store.keys.outbox, fields)
    assert deliver(store, ours).rpcs == []
    assert store.dead_letters.counts() == (1, 1)


def test_the_entries_after_a_refused_one_are_delivered(
    store: Store, seals: tuple[KeySeal, KeySeal]
) -> None:
    ours, _ = seals
    store.client.xadd(store.keys.outbox, {"kind": "memo", "jobid": "7", "payload": "{}"})
    signed_store(store, ours).outbox.append(OutboxMessage("epilog-remove", 7, {"id": 7}))
    assert deliver(store, ours).rpcs == [("job-manager.dws.epilog-remove", {"id": 7})]


def test_keys_outside_the_pipeline_are_refused_with_the_file_named(tmp_path: Path) -> None:
    key = tmp_path / "k.pem"
    key.write_text("not a key")
    key.chmod(0o644)
    with pytest.raises(Exception, match="chmod 600"):
        seal_from(str(key), str(tmp_path))

"""An outbox entry of an unknown kind, with a payload that is not JSON or lacks a field the
Flux request needs, is set aside as a dead letter; the bridge delivers the entries after it."""

from __future__ import annotations

from pipeline.services.bridge.delivery import Deliverer
from pipeline.store import Store
from pipeline.store.outbox import OutboxMessage
from tests.services.bridge.recording_flux import RecordingFlux


def test_bad_entries_become_dead_letters_and_delivery_goes_on(store: Store) -> None:
    outbox = store.keys.outbox
    store.client.xadd(outbox, {"kind": "launch-missiles", "jobid": "5", "payload": "{}"})
    store.client.xadd(outbox, {"kind": "memo", "jobid": "5", "payload": "{not json"})
    store.client.xadd(outbox, {"kind": "memo", "payload": "{}"})  # no jobid field
    store.client.xadd(outbox, {"kind": "memo", "jobid": "5", "payload": "[1, 2]"})
    store.outbox.append(OutboxMessage("set-property", 5, {"targets": "n1"}))  # no key, value
    store.outbox.append(OutboxMessage("kvs-put", 5, {"value": 1}))  # no key
    store.outbox.append(OutboxMessage("epilog-remove", 5, {"id": 5}))
    flux = RecordingFlux()
    deliverer = Deliverer(store.outbox, flux, "c1", lambda host: f"/cluster/{host}")
    assert deliverer.run_once() == 7
    assert flux.rpcs == [("job-manager.dws.epilog-remove", {"id": 5})]
    assert store.outbox.backlog() == 0
    kept, total = store.dead_letters.counts()
    assert (kept, total) == (6, 6)
    reasons = [letter.reason for letter in store.dead_letters.latest(10)]
    assert any("launch-missiles" in r for r in reasons)
    assert any("'key'" in r for r in reasons)
    assert all(letter.where.startswith("outbox") for letter in store.dead_letters.latest(10))


def test_a_dead_letter_keeps_the_entry_as_it_was(store: Store) -> None:
    store.client.xadd(store.keys.outbox, {"kind": "nope", "jobid": "9", "payload": '{"a": 1}'})
    Deliverer(store.outbox, RecordingFlux(), "c1", lambda host: host).run_once()
    [letter] = store.dead_letters.latest(1)
    assert '"kind": "nope"' in letter.raw and '"jobid": "9"' in letter.raw

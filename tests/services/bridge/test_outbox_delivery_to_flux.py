"""The bridge turns outbox messages into flux-coral2's requests and acknowledges them."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.errors import FluxError, FluxUnreachable
from pipeline.services.bridge.delivery import Deliverer, translate
from pipeline.store import Store
from pipeline.store.outbox import OutboxMessage


def path_of(host: str) -> str:
    return f"/cluster/chassis0/{host}"


def test_properties_are_set_on_fluxion_containment_paths() -> None:
    message = OutboxMessage(
        "set-property", 5, {"targets": "compute[01-02]", "key": "badrabbit", "value": "bad"}
    )
    assert translate(message, path_of) == (
        "sched-fluxion-resource.set_property",
        {
            "sp_resource_path": ["/cluster/chassis0/compute01", "/cluster/chassis0/compute02"],
            "sp_keyval": "badrabbit=bad",
        },
    )


@pytest.mark.parametrize(
    ("kind", "topic"),
    [
        ("resource-update", "job-manager.dws.resource-update"),
        ("prolog-remove", "job-manager.dws.prolog-remove"),
        ("epilog-remove", "job-manager.dws.epilog-remove"),
        ("memo", "job-manager.memo"),
        ("exception", "job-manager.raise"),
        ("drain", "resource.drain"),
    ],
)
def test_rpc_kinds_keep_their_payload(kind: str, topic: str) -> None:
    payload = {"id": 5, "x": [1]}
    assert translate(OutboxMessage(kind, 5, payload), path_of) == (topic, payload)


class Flux:
    def __init__(self, fail: Exception | None = None) -> None:
        self.fail = fail
        self.rpcs: list[tuple[str, dict[str, Any]]] = []
        self.kvs: dict[tuple[int, str], Any] = {}

    def rpc(self, topic: str, payload: dict[str, Any], nodeid: int = 0) -> dict[str, Any]:
        if self.fail is not None:
            raise self.fail
        self.rpcs.append((topic, payload))
        return {}

    def kvs_put(self, jobid: int, key: str, value: Any) -> None:
        if self.fail is not None:
            raise self.fail
        self.kvs[(jobid, key)] = value


def test_delivered_messages_are_acknowledged_and_kvs_puts_committed(store: Store) -> None:
    store.outbox.append(OutboxMessage("kvs-put", 5, {"id": 5, "key": "rabbit_x", "value": [1]}))
    store.outbox.append(OutboxMessage("epilog-remove", 5, {"id": 5}))
    flux = Flux()
    assert Deliverer(store.outbox, flux, "c1", path_of).run_once() == 2
    assert flux.kvs == {(5, "rabbit_x"): [1]}
    assert flux.rpcs == [("job-manager.dws.epilog-remove", {"id": 5})]
    assert store.outbox.backlog() == 0


def test_an_error_answer_is_logged_and_acknowledged(store: Store) -> None:
    store.outbox.append(OutboxMessage("epilog-remove", 5, {"id": 5}))
    deliverer = Deliverer(store.outbox, Flux(FluxError("job not found")), "c1", path_of)
    assert deliverer.run_once() == 1
    assert store.outbox.backlog() == 0


def test_unreachable_flux_leaves_the_message_for_the_next_delivery(store: Store) -> None:
    store.outbox.append(OutboxMessage("epilog-remove", 5, {"id": 5}))
    down = Deliverer(store.outbox, Flux(FluxUnreachable("broker gone")), "c1", path_of)
    assert down.run_once() == 0
    assert store.outbox.backlog() == 1
    up = Flux()
    assert Deliverer(store.outbox, up, "c1", path_of).run_once(count=10) == 0  # still pending
    assert Deliverer(store.outbox, up, "c2", path_of).run_once() == 0
    store.outbox.read("c1", count=10, reclaim_idle_s=0)  # c1's pending entry goes back
    assert store.outbox.backlog() == 1


class FluxThatGoesAway(Flux):
    """Answers ``answered`` RPCs, then is unreachable."""

    def __init__(self, answered: int) -> None:
        super().__init__()
        self.answered = answered

    def rpc(self, topic: str, payload: dict[str, Any], nodeid: int = 0) -> dict[str, Any]:
        if len(self.rpcs) == self.answered:
            raise FluxUnreachable("broker gone")
        return super().rpc(topic, payload, nodeid)


def test_messages_delivered_before_flux_went_away_are_acknowledged_and_the_rest_stay(
    store: Store,
) -> None:
    for jobid in (5, 6, 7):
        store.outbox.append(OutboxMessage("epilog-remove", jobid, {"id": jobid}))
    flux = FluxThatGoesAway(answered=2)
    assert Deliverer(store.outbox, flux, "c1", path_of).run_once() == 2
    assert store.outbox.backlog() == 1
    (left,) = store.outbox.read("c2", reclaim_idle_s=0)
    assert left.message == OutboxMessage("epilog-remove", 7, {"id": 7})

"""A message Flux refuses (a ``resource-update`` of a job no longer in DEPEND, say) is
acknowledged as coral2_dws would, and kept where an admin looks: a line in the job's
timeline (``job show``) naming the refusal, and a count by kind (``status``, and the
exporter's ``coral2_flux_refusals_total``)."""

from __future__ import annotations

from pipeline.errors import FluxError
from pipeline.services.bridge.delivery import Deliverer
from pipeline.store import Store
from pipeline.store.outbox import OutboxMessage
from tests.services.bridge.test_outbox_delivery_to_flux import Flux, path_of


def test_the_refusal_is_noted_in_the_timeline_and_counted(store: Store) -> None:
    payload = {"id": 7, "resources": {}}
    store.outbox.append(OutboxMessage("resource-update", 7, payload))
    refusing = Flux(FluxError("job 7 not found in depend state"))
    assert Deliverer(store.outbox, refusing, "c1", path_of).run_once() == 1
    assert store.outbox.backlog() == 0
    lines = [e.what for e in store.timeline.read(7)]
    assert "Flux refused resource-update: job 7 not found in depend state" in lines
    assert store.metrics.refusals_total() == {"resource-update": 1}


def test_a_message_flux_takes_is_not_counted(store: Store) -> None:
    store.outbox.append(OutboxMessage("epilog-remove", 8, {"id": 8}))
    assert Deliverer(store.outbox, Flux(), "c1", path_of).run_once() == 1
    assert store.metrics.refusals_total() == {}

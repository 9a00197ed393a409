"""Every request the bridge delivers has the shape flux-coral2 sends (flux-core's own
``post-event`` service for the ``cray-slingshot`` event)."""

from __future__ import annotations

from typing import Any

from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import run

SHAPES: dict[str, dict[str, type | tuple[type, ...]]] = {
    "job-manager.dws.resource-update": {
        "id": int,
        "resources": list,
        "exclude": (dict, type(None)),
        "errmsg": str,
    },
    "job-manager.dws.prolog-remove": {"id": int, "variables": dict},
    "job-manager.dws.epilog-remove": {"id": int},
    "job-manager.memo": {"id": int, "memo": dict},
    "job-manager.raise": {"id": int, "type": str, "severity": int, "note": str},
    "job-manager.post-event.post": {"id": int, "name": str, "context": dict},
}
REQUIRED = {
    "job-manager.dws.resource-update": {"id", "resources", "exclude"},
    "job-manager.dws.prolog-remove": {"id", "variables"},
    "job-manager.dws.epilog-remove": {"id"},
    "job-manager.memo": {"id", "memo"},
    "job-manager.raise": {"id", "type", "severity", "note"},
    "job-manager.post-event.post": {"id", "name"},
}


def check(topic: str, payload: dict[str, Any]) -> None:
    shape = SHAPES[topic]
    assert set(payload) <= set(shape), (topic, payload)
    assert REQUIRED[topic] <= set(payload), (topic, payload)
    for key, value in payload.items():
        assert isinstance(value, shape[key]), (topic, key, value)


def test_every_delivered_request_has_flux_coral2s_payload(system: SimulatedSystem) -> None:
    ok = run(system, "#DW jobdw type=xfs capacity=8GiB name=scratch")
    refused = run(system, "#DW jobdw type=xfs capacity=4TiB name=huge", n=1)
    assert system.flux is not None
    with system.flux.lock:
        delivered = [(t, p) for t, p in system.flux.received if p.get("id") in (ok.id, refused.id)]
    topics = {t for t, _ in delivered}
    assert {
        "job-manager.dws.resource-update",
        "job-manager.dws.prolog-remove",
        "job-manager.dws.epilog-remove",
        "job-manager.memo",
    } <= topics
    for topic, payload in delivered:
        check(topic, payload)
    memos = [p["memo"] for t, p in delivered if t == "job-manager.memo" and p["id"] == ok.id]
    assert memos[0] == {"rabbit_workflow": f"fluxjob-{ok.id}"}
    assert set(memos[1]) == {"rabbits"}
    [update] = [p for t, p in delivered if t.endswith("resource-update") and p["id"] == ok.id]
    assert update["exclude"] is None  # drain_compute_nodes = true in the sample config
    assert "errmsg" not in update
    prolog = next(p for t, p in delivered if t.endswith("prolog-remove"))
    assert all(isinstance(v, str) for v in prolog["variables"].values())

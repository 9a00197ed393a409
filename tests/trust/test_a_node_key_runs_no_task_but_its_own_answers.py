"""A node's key signs its own answers and nothing else: a ``dws.create`` of a persistent
file system for root, a ``dws.teardown``, a protocol-1 body and a "hybrid" body (a
protocol-2 header over a dict body) — all signed with compute63's key and pushed with its
Redis user — are each a dead letter naming the signer, and no Workflow is made."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

from pipeline.errors import NotFound
from pipeline.sim.system import SimulatedSystem
from tests.trust.conftest import Attacker, dead_letters, new_dead_letter
from tests.trust.forge import forge, protocol2

CREATE = {
    "jobid": 424242,
    "userid": 0,
    "dw": "#DW create_persistent name=stolen type=lustre capacity=1TiB",
    "resources": [{"type": "node", "count": 1}],
}


def no_workflow(system: SimulatedSystem) -> bool:
    assert system.dws is not None
    with pytest.raises(NotFound):
        system.dws.get_workflow("fluxjob-424242")
    return True


def proto1(claim: dict[str, Any]) -> bytes:
    return json.dumps(
        {"task": "dws.create", "id": "p1", "args": [], "kwargs": CREATE, "coral2_claim": claim}
    ).encode()


def hybrid(claim: dict[str, Any]) -> bytes:
    return json.dumps({"args": [], "kwargs": CREATE, "embed": {"coral2_claim": claim}}).encode()


def test_a_forged_dws_create_signed_by_a_node_is_a_dead_letter(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker
) -> None:
    raw = forge(attacker.key, attacker.cert, "dws.create", "lifecycle", protocol2(CREATE))
    before = len(dead_letters(system, admin))
    attacker.client.lpush("lifecycle", raw)
    letter = new_dead_letter(system, admin, before)
    assert "compute63's node key may sign only" in letter.reason
    assert "'dws.create'" in letter.reason
    assert no_workflow(system)


def test_a_forged_dws_teardown_signed_by_a_node_is_a_dead_letter(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker
) -> None:
    teardown = protocol2({"jobid": 424242})
    raw = forge(attacker.key, attacker.cert, "dws.teardown", "lifecycle", teardown)
    before = len(dead_letters(system, admin))
    attacker.client.lpush("lifecycle", raw)
    assert "'dws.teardown'" in new_dead_letter(system, admin, before).reason


@pytest.mark.parametrize(
    ("shape", "proto1_headers"), [(proto1, True), (proto1, False), (hybrid, False)]
)
def test_bodies_of_any_other_shape_are_dead_letters(
    system: SimulatedSystem,
    admin: redis.Redis,
    attacker: Attacker,
    shape: Any,
    proto1_headers: bool,
) -> None:
    raw = forge(
        attacker.key, attacker.cert, "dws.create", "lifecycle", shape, proto1=proto1_headers
    )
    before = len(dead_letters(system, admin))
    attacker.client.lpush("lifecycle", raw)
    letter = new_dead_letter(system, admin, before)
    assert "not Celery's protocol-2 [args, kwargs, embed]" in letter.reason
    assert "compute63" in letter.reason
    assert no_workflow(system)

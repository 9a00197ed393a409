"""A node's key signs its own answers and nothing else. compute63's Redis user cannot push a
task onto the lifecycle queue at all; on the answers stream, the one key it may append to, a
``dws.create`` of a persistent file system for root, a ``dws.teardown``, and an answer whose
body is protocol 1 or "hybrid" (a protocol-2 header over a dict body) — all signed with
compute63's key — are each a dead letter, and no Workflow is made."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from coral2_sim.system import SimulatedSystem

from pipeline.errors import NotFound
from tests.trust.conftest import Attacker, answers_key, dead_letters, new_dead_letter
from tests.trust.forge import forge, forge_answer, protocol2

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


def test_a_nodes_user_cannot_push_a_task_onto_the_lifecycle_queue(
    system: SimulatedSystem, attacker: Attacker
) -> None:
    raw = forge(attacker.key, attacker.cert, "dws.create", "lifecycle", protocol2(CREATE))
    with pytest.raises(redis.exceptions.NoPermissionError):
        attacker.client.lpush("lifecycle", raw)
    assert no_workflow(system)


@pytest.mark.parametrize(
    ("name", "kwargs"), [("dws.create", CREATE), ("dws.teardown", {"jobid": 424242})]
)
def test_a_task_a_node_appends_to_the_answers_stream_is_a_dead_letter(
    system: SimulatedSystem,
    admin: redis.Redis,
    attacker: Attacker,
    name: str,
    kwargs: dict[str, Any],
) -> None:
    entry = forge_answer(attacker.key, attacker.cert, name, protocol2(kwargs))
    before = len(dead_letters(system, admin))
    attacker.client.xadd(answers_key(system), entry)  # type: ignore[arg-type]
    letter = new_dead_letter(system, admin, before)
    assert f"{name!r} is not a node answer" in letter.reason
    assert no_workflow(system)


@pytest.mark.parametrize("shape", [proto1, hybrid])
def test_answers_of_any_other_shape_are_dead_letters(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker, shape: Any
) -> None:
    entry = forge_answer(attacker.key, attacker.cert, "job.prolog_done", shape)
    before = len(dead_letters(system, admin))
    attacker.client.xadd(answers_key(system), entry)  # type: ignore[arg-type]
    letter = new_dead_letter(system, admin, before)
    assert "not Celery's protocol-2 [args, kwargs, embed]" in letter.reason
    assert "compute63" in letter.reason
    assert no_workflow(system)

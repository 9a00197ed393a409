"""A node's heartbeat speaks for that node alone: its Redis user may set and delete its
own ``node-alive`` key, as a string, and may not touch another node's, nor read either
back; so no node can make a dead node look alive, or a live one dead."""

from __future__ import annotations

import pytest
import redis
from coral2_sim.system import SimulatedSystem

from tests.trust.conftest import ATTACKER, Attacker


@pytest.mark.parametrize(
    "command",
    [
        ("SET", "{p}:node-alive:compute05", "1", "EX", "90"),
        ("DEL", "{p}:node-alive:compute05"),
        ("GET", "{p}:node-alive:compute05"),
        ("GET", "{p}:node-alive:" + ATTACKER),
        ("LPUSH", "{p}:node-alive:" + ATTACKER, "x"),
        ("HSET", "{p}:node-alive:" + ATTACKER, "f", "x"),
    ],
    ids=" ".join,
)
def test_another_nodes_heartbeat_and_any_other_use_of_its_own_are_refused(
    system: SimulatedSystem, attacker: Attacker, command: tuple[str, ...]
) -> None:
    filled = [part.replace("{p}", system.prefix) for part in command]
    with pytest.raises(redis.exceptions.NoPermissionError):
        attacker.client.execute_command(*filled)


def test_its_own_heartbeat_is_set_with_its_expiry_and_deleted(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker
) -> None:
    key = f"{system.prefix}:node-alive:{ATTACKER}"
    assert attacker.client.set(key, "1", ex=90)
    assert 0 < admin.ttl(key) <= 90
    assert attacker.client.delete(key) == 1
    assert admin.exists(key) == 0

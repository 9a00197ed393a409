"""A forgery on a node's own queue — unsigned, or signed by that node's own key — is set
aside by the node worker as a dead letter that ``deadletters`` and ``status`` see; Redis
refuses none of the node worker's commands in doing so (its ACL grants what redis-py
sends, ``INCRBY`` for the count)."""

from __future__ import annotations

import json

import redis
from coral2_sim.system import SimulatedSystem

from tests.trust.conftest import Attacker, dead_letters, new_dead_letter
from tests.trust.forge import forge, protocol2


def node_refusals(admin: redis.Redis) -> list[object]:
    return [e for e in admin.acl_log(128) if e.get("username") in ("node", b"node")]


def test_an_unsigned_message_on_a_node_queue_is_a_dead_letter(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker
) -> None:
    before = len(dead_letters(system, admin))
    attacker.client.lpush("node.compute63", json.dumps({"not": "a kombu message"}))
    letter = new_dead_letter(system, admin, before)
    assert letter.where == "compute63:node.compute63"  # set aside by the node, named so
    assert node_refusals(admin) == []


def test_a_node_signed_task_on_its_own_queue_is_a_dead_letter(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker
) -> None:
    kwargs = {"hostname": "compute63", "jobid": 1, "userid": 0}
    raw = forge(attacker.key, attacker.cert, "node.prolog", "node.compute63", protocol2(kwargs))
    before = len(dead_letters(system, admin))
    attacker.client.lpush("node.compute63", raw)
    letter = new_dead_letter(system, admin, before)
    assert letter.where == "compute63:node.compute63"  # set aside by the node, named so
    assert "a certificate this process does not trust" in letter.reason
    assert node_refusals(admin) == []

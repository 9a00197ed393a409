"""Kombu's shared unacked hash and index, whose entries the management workers restore
onto the queue each names, and the binding tables a direct exchange routes by, are out of a
node's reach: compute63's user cannot plant a message for the ``timeouts`` queue or a list
at a job's lock key through them, nor push onto any queue but its answers'. Nothing keeps
an unacked hash any more (the ledger redelivers), and a node cannot start one."""

from __future__ import annotations

import json

import pytest
import redis
from coral2_sim.system import SimulatedSystem

from tests.trust.conftest import Attacker


def refused(call: object) -> None:
    assert callable(call)
    with pytest.raises(redis.exceptions.NoPermissionError):
        call()


def test_the_shared_unacked_hash_and_index_refuse_a_node(
    system: SimulatedSystem, attacker: Attacker, admin: redis.Redis
) -> None:
    lock = f"{system.prefix}:job:5:lock"
    planted = json.dumps([{"body": "", "headers": {}, "properties": {}}, "", lock])
    refused(lambda: attacker.client.hset("unacked", "planted", planted))
    refused(lambda: attacker.client.zadd("unacked_index", {"planted": 0}))
    assert admin.hget("unacked", "planted") is None
    assert admin.type(lock) in (b"none", b"string")  # never a list planted by a node


def test_the_binding_tables_refuse_a_node(attacker: Attacker) -> None:
    member = "node.compute63\x06\x16\x06\x16timeouts"
    refused(lambda: attacker.client.sadd("_kombu.binding.node.compute63", member))
    refused(lambda: attacker.client.sadd("_kombu.binding.lifecycle", member))


def test_a_node_pushes_onto_no_queue_but_its_answers(attacker: Attacker) -> None:
    for queue in ("timeouts", "housekeeping", "node.compute05"):
        refused(lambda queue=queue: attacker.client.lpush(queue, "forged"))  # type: ignore[misc]


def test_a_node_keeps_no_unacked_keys_of_its_own(attacker: Attacker) -> None:
    refused(lambda: attacker.client.hset("node.compute63:unacked", "tag", "entry"))
    refused(lambda: attacker.client.zadd("node.compute63:unacked_index", {"tag": 0}))

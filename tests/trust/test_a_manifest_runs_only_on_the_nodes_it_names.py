"""A job's node task goes out as one signed manifest for many nodes, each node's copy under
the id ``<manifest>:<node>``. A copy runs only where the management side's signature
says: a copy whose id names a node the manifest does not, a manifest that names a
hostname in its arguments, one signed by a node's key, or another node's copy pushed onto
this node's queue, is set aside as a dead letter and nothing of it runs."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import redis
from coral2_sim.system import SimulatedSystem

from tests.trust.conftest import Attacker, answers_key, dead_letters, new_dead_letter
from tests.trust.forge import forge, forge_answer, protocol2

PROLOG = {"jobid": 626262, "userid": 1001, "clientmount": None, "cxi": None}


def management_key(system: SimulatedSystem) -> tuple[Path, Path]:
    env = system.extra_env
    key = env["CORAL2_PIPELINE_PIPELINE__SECURITY_KEY"]
    return Path(key), Path(env["CORAL2_PIPELINE_PIPELINE__SECURITY_CERTIFICATE"])


def manifest_copy(
    system: SimulatedSystem, nodes: str, node: str, kwargs: dict[str, Any], queue: str = ""
) -> bytes:
    """The copy for ``node`` of a ``node.prolog`` manifest the management key signed for
    ``nodes``, on ``queue`` (``node``'s by default)."""
    manifest = str(uuid.uuid4())
    claim = {"task": "node.prolog", "id": manifest, "nodes": nodes}
    key, cert = management_key(system)
    queue = queue or f"node.{node}"
    return forge(
        key,
        cert,
        "node.prolog",
        queue,
        protocol2(kwargs),
        task_id=f"{manifest}:{node}",
        claim=claim,
    )


def test_a_copy_for_a_node_the_manifest_does_not_name_is_a_dead_letter(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker
) -> None:
    raw = manifest_copy(system, "compute[01-02]", "compute63", PROLOG)
    before = len(dead_letters(system, admin))
    attacker.client.lpush("node.compute63", raw)
    letter = new_dead_letter(system, admin, before)
    assert letter.where == "compute63:node.compute63"  # set aside by the node, named so
    assert "to 'compute[01-02]', not for" in letter.reason
    assert system.store is not None and system.store.tally.nodes(626262, "prolog") == set()


def test_a_manifest_that_names_a_hostname_in_its_arguments_is_a_dead_letter(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker
) -> None:
    raw = manifest_copy(system, "compute63", "compute63", {**PROLOG, "hostname": "compute05"})
    before = len(dead_letters(system, admin))
    attacker.client.lpush("node.compute63", raw)
    letter = new_dead_letter(system, admin, before)
    assert "a manifest names its nodes in its claim, never in its arguments" in letter.reason


def test_a_manifest_signed_by_a_node_key_is_a_dead_letter(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker
) -> None:
    manifest = str(uuid.uuid4())
    claim = {"task": "job.prolog_done", "id": manifest, "nodes": "compute[01-63]"}
    kwargs = {"jobid": 626262, "node": "compute63", "task_id": f"{manifest}:compute63"}
    entry = forge_answer(
        attacker.key, attacker.cert, "job.prolog_done", protocol2(kwargs), claim=claim
    )
    before = len(dead_letters(system, admin))
    attacker.client.xadd(answers_key(system), entry)  # type: ignore[arg-type]
    letter = new_dead_letter(system, admin, before)
    assert "only the management key may sign a manifest of node tasks" in letter.reason


def test_another_nodes_copy_on_this_nodes_queue_is_a_dead_letter_not_a_task_error(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker
) -> None:
    # a genuine copy for compute05 (a replay), pushed by compute63 onto its own queue
    raw = manifest_copy(system, "compute[05,63]", "compute05", PROLOG, queue="node.compute63")
    before = len(dead_letters(system, admin))
    attacker.client.lpush("node.compute63", raw)
    letter = new_dead_letter(system, admin, before)
    assert letter.where == "compute63:node.compute63"
    assert "node task for 'compute05' came in on queue 'node.compute63'" in letter.reason
    assert system.store is not None and system.store.tally.nodes(626262, "prolog") == set()

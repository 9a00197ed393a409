"""The copies of a job's node manifest that the broker lost (noted in the ledger, never
answered) go out again as that same manifest, signed once for just their nodes: each copy
under the id it was noted under, on its node's queue, where the node worker runs it as it
runs the first; one line in the log says so for all of them."""

from __future__ import annotations

import base64
import json
import time
import uuid
from typing import Any

import redis
from coral2_sim.system import SimulatedSystem

from pipeline.platform.signing import CLAIM
from tests.trust.forge import SEPARATOR

#: A node of the system, whose node worker runs its copy, and two that have no worker, whose
#: copies wait in their queues to be read.
SERVED, SPARES = "compute05", ("spare01", "spare02")
PROLOG = {"jobid": 737373, "userid": 1001, "clientmount": None, "cxi": None}


def signed_body(raw: bytes) -> tuple[str, list[Any]]:
    """A queued copy's task id and its signed body ``[args, kwargs, embed]``."""
    message = json.loads(raw)
    envelope = base64.b64decode(base64.b64decode(message["body"]))
    return message["headers"]["id"], json.loads(envelope.split(SEPARATOR)[-1])


def wait_for(condition: Any, what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_lost_copies_of_a_manifest_go_out_again_as_one_manifest_for_their_nodes(
    system: SimulatedSystem, admin: redis.Redis
) -> None:
    assert system.store is not None
    manifest = str(uuid.uuid4())
    nodes = [SERVED, *SPARES]
    ids = {node: f"{manifest}:{node}" for node in nodes}
    # what a broker that lost the pushed copies leaves: their ledger entries, due now
    notes = [(ids[n], "node.prolog", {"hostname": n, **PROLOG}, f"node.{n}") for n in nodes]
    system.store.ledger.note_all(notes, now=time.time() - 300, resend_after_s=1)

    wait_for(lambda: all(admin.llen(f"node.{s}") for s in SPARES), "the copies sent again")
    copies = [signed_body(admin.lindex(f"node.{spare}", 0)) for spare in SPARES]  # type: ignore[arg-type]
    assert [task_id for task_id, _ in copies] == [ids[spare] for spare in SPARES]
    (_, first), (_, second) = copies
    assert first == second, "one body, signed once, for every node"
    args, kwargs, embed = first
    assert (args, kwargs) == ([], PROLOG)
    assert embed[CLAIM] == {
        "task": "node.prolog",
        "id": manifest,
        "nodes": "compute05,spare[01-02]",
    }

    # the node that has a worker runs its copy and answers: its entry is crossed out
    wait_for(lambda: system.store.ledger.get(ids[SERVED]) is None, f"{SERVED}'s answer")  # type: ignore[union-attr]
    assert all(system.store.ledger.get(ids[spare]) is not None for spare in SPARES)
    logs = "".join(p.read_text(errors="replace") for p in system.workdir.glob("*.log"))
    said = [line for line in logs.splitlines() if f"(manifest {manifest})" in line]
    assert len(said) == 1, said
    assert "node.prolog on 3 node(s) compute05,spare[01-02]" in said[0]
    for spare in SPARES:
        system.store.ledger.done(ids[spare])
        admin.delete(f"node.{spare}")

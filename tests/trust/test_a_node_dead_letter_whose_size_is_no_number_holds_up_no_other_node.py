"""A node's own dead letter (``node.dead_letter`` on its answers stream) whose ``size`` is
no number the one parser reads — a superscript digit, or more digits than Python's ``int``
takes — is kept with the size of what it holds, named after the node; the entry is deleted
with its batch, and a job on two other nodes runs to its end (it used to stop every node's
answers: the reader read the same entry every second)."""

from __future__ import annotations

import time

import pytest
import redis
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import nodes
from tests.trust.conftest import ATTACKER, Attacker, answers_key, dead_letters, new_dead_letter


@pytest.mark.parametrize("size", ["²", "9" * 5000], ids=["superscript", "5000-digits"])
def test_the_letter_is_kept_and_a_job_elsewhere_completes(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker, size: str
) -> None:
    assert system.flux is not None
    before = len(dead_letters(system, admin))
    entry = {
        "task": "node.dead_letter",
        "where": "node.compute63",
        "raw": "what it could not read",
        "reason": "its own words",
        "size": size,
    }
    attacker.client.xadd(answers_key(system), entry)  # type: ignore[arg-type]
    letter = new_dead_letter(system, admin, before)
    assert letter.where == f"{ATTACKER}:node.compute63"
    assert letter.size == len("what it could not read")  # the size it gave is no number
    deadline = time.monotonic() + 60
    while admin.xlen(answers_key(system)):
        assert time.monotonic() < deadline, "the entry was never deleted"
        time.sleep(0.05)
    jobid = system.flux.submit(nodes(2))
    assert system.flux.wait_inactive([jobid], 120), system.flux.job(jobid).eventlog
    assert system.flux.job(jobid).result == "COMPLETED"

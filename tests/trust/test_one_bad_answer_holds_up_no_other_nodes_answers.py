"""Answers a node signs that no task can take — an extra argument, a missing one, a
mistyped or oversized one, a job id past 64 bits — are each set aside as a dead letter,
named after the node, and deleted with the rest of what was read: the answers of every
other node go on being counted, and a job on other nodes runs to its end."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import nodes
from tests.trust.conftest import ATTACKER, Attacker, answers_key, dead_letters, new_dead_letter
from tests.trust.forge import forge_answer, protocol2

OWN = {"jobid": 616161, "node": ATTACKER, "task_id": "t63"}


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({**OWN, "extra": 1}, "extra: unknown key"),
        ({"jobid": 616161, "node": ATTACKER}, "task_id: required key is missing"),
        ({**OWN, "jobid": "616161"}, "jobid: Input should be a valid integer"),
        ({**OWN, "jobid": 2**64}, "jobid: Input should be less than or equal to"),
        ({**OWN, "error": "e" * 5000}, "error: String should have at most 4096 characters"),
        ({**OWN, "late": "yes"}, "late: Input should be a valid boolean"),
    ],
    ids=["extra", "missing", "mistyped", "past-64-bits", "oversized", "not-a-bool"],
)
def test_the_bad_answer_is_a_dead_letter_and_a_job_elsewhere_still_runs(
    system: SimulatedSystem,
    admin: redis.Redis,
    attacker: Attacker,
    kwargs: dict[str, Any],
    reason: str,
) -> None:
    assert system.flux is not None and system.store is not None
    before = len(dead_letters(system, admin))
    entry = forge_answer(attacker.key, attacker.cert, "job.prolog_done", protocol2(kwargs))
    attacker.client.xadd(answers_key(system), entry)  # type: ignore[arg-type]
    letter = new_dead_letter(system, admin, before)
    assert reason in letter.reason
    assert letter.where == f"{ATTACKER}:answers"
    # the entry is deleted, and the answers of the nodes of a job run after it are counted
    deadline = time.monotonic() + 60
    while admin.xlen(answers_key(system)):
        assert time.monotonic() < deadline, "the bad answer was never deleted"
        time.sleep(0.05)
    jobid = system.flux.submit(nodes(2))
    assert system.flux.wait_inactive([jobid], 120), system.flux.job(jobid).eventlog
    assert system.flux.job(jobid).result == "COMPLETED"
    assert system.store.tally.nodes(616161, "prolog") == set()

"""An answer counts only when it comes from the node the work was sent to, for that job:
compute63, holding its own key, cannot fail (or release) a job that runs on compute05 —
not by naming compute05, not by naming itself, not by naming a task that was sent to
compute05. Each try is a dead letter; the job's record and tallies are untouched, and the
ledger still holds the real task."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis
from coral2_sim.system import SimulatedSystem

from pipeline.model.job import JobRecord, NodeWork
from tests.trust.conftest import Attacker, answers_key, dead_letters, new_dead_letter
from tests.trust.forge import forge_answer, protocol2

JOBID = 515151


@pytest.fixture(scope="module")
def job_on_compute05(system: SimulatedSystem) -> JobRecord:
    """A job held at RUN on compute05, whose prolog was sent there as task ``real``."""
    assert system.store is not None
    record = JobRecord(
        jobid=JOBID,
        userid=1001,
        node_work=NodeWork(nodes=["compute05"], since=time.time(), timeout_s=3600),
    )
    system.store.jobs.create(record)
    system.store.ledger.note(
        "real",
        "node.prolog",
        {"hostname": "compute05", "jobid": JOBID, "userid": 1001},
        now=time.time(),
        resend_after_s=3600,
        queue="node.compute05",
    )
    return record


def answer(attacker: Attacker, kwargs: dict[str, Any]) -> dict[str, str]:
    return forge_answer(attacker.key, attacker.cert, "job.prolog_done", protocol2(kwargs))


def untouched(system: SimulatedSystem) -> None:
    assert system.store is not None
    record = system.store.jobs.get(JOBID)
    assert record is not None and record.node_work is not None
    assert record.node_work.failed == ""
    assert not record.node_work.released
    assert system.store.tally.nodes(JOBID, "prolog") == set()
    assert system.store.ledger.get("real") is not None


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        (
            {"jobid": JOBID, "node": "compute05", "task_id": "real", "error": "forged"},
            "compute63's key signed an answer for node 'compute05'",
        ),
        (
            {"jobid": JOBID, "node": "compute63", "task_id": "t63", "error": "forged"},
            f"compute63 answered for job {JOBID}, which does not run on it",
        ),
        (
            {"jobid": JOBID, "node": "compute63", "task_id": "real"},
            "which was sent to node.compute05",
        ),
    ],
    ids=["naming-compute05", "naming-itself", "naming-compute05s-task"],
)
def test_a_forged_answer_for_a_job_on_another_node_is_a_dead_letter(
    system: SimulatedSystem,
    admin: redis.Redis,
    attacker: Attacker,
    job_on_compute05: JobRecord,
    kwargs: dict[str, Any],
    reason: str,
) -> None:
    before = len(dead_letters(system, admin))
    attacker.client.xadd(answers_key(system), answer(attacker, kwargs))  # type: ignore[arg-type]
    assert reason in new_dead_letter(system, admin, before).reason
    untouched(system)

"""Flux job ids are predictable, so root on compute63 may sign answers for a job that does
not exist yet. Nothing proves such an answer (no node task was sent for it, no record
names the node), so nothing of it is counted, and each is kept as a dead letter naming
the node; when that job later runs on two other nodes, their two answers release it."""

from __future__ import annotations

import time

import redis
from coral2_sim.system import SimulatedSystem

from tests.conftest import make_r
from tests.trust.conftest import ATTACKER, Attacker, answers_key, dead_letters
from tests.trust.forge import forge_answer, protocol2

FUTURE = 727272


def test_a_future_jobs_answer_counts_for_nothing_and_the_job_is_released_by_its_nodes(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker
) -> None:
    assert system.store is not None and system.hooks is not None
    kwargs = {"jobid": FUTURE, "node": ATTACKER, "task_id": "guessed"}
    for name in ("job.prolog_done", "job.epilog_done"):
        entry = forge_answer(attacker.key, attacker.cert, name, protocol2(kwargs))
        attacker.client.xadd(answers_key(system), entry)  # type: ignore[arg-type]
    # each went on as its task, which counted nothing and left a dead letter naming the node
    deadline = time.monotonic() + 60
    while len(traces := [d for d in dead_letters(system, admin) if str(FUTURE) in d.reason]) < 2:
        assert time.monotonic() < deadline, "the answers left no trace"
        time.sleep(0.1)
    assert {d.where for d in traces} == {f"{ATTACKER}:answers"}
    assert all("which has no record (long gone, or not run yet)" in d.reason for d in traces)
    assert system.store.tally.nodes(FUTURE, "prolog") == set()
    assert system.store.tally.nodes(FUTURE, "clean") == set()

    run = {"jobid": FUTURE, "state": "run", "userid": 1001, "R": make_r("compute[01-02]")}
    system.hooks.job_state(run)
    deadline = time.monotonic() + 120
    while (verdict := system.store.releases.get(FUTURE)) is None:
        assert time.monotonic() < deadline, "the job was never released"
        time.sleep(0.1)
    assert verdict.status == 0
    assert system.store.tally.nodes(FUTURE, "prolog") == {"compute01", "compute02"}
    system.hooks.job_state({"jobid": FUTURE, "state": "cleanup"})

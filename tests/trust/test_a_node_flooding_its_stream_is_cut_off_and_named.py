"""A node that writes more answers than a node answers (``pipeline.answers_per_minute``),
or one entry larger than any answer (``pipeline.answer_max_bytes``), costs the reader no
more than that: past the rate, what it wrote is deleted unread; the large entry is set
aside unread; each is said once in a dead letter, and the node is flagged, which
``status`` shows until the operator deals with it (the runbook says how to shut it
out). Every other node's answers go on being counted meanwhile."""

from __future__ import annotations

import time

import redis
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import nodes
from tests.trust.conftest import answers_key, dead_letters, root_on

RATE = 1200  # the default answers_per_minute


def flagged_for(system: SimulatedSystem, host: str, why: str, timeout_s: float = 60) -> None:
    """Wait until ``host`` is flagged for ``why``."""
    assert system.store is not None
    deadline = time.monotonic() + timeout_s
    while why not in system.store.answers.flagged().get(host, (0.0, ""))[1]:
        assert time.monotonic() < deadline, f"{host} was never flagged for {why!r}"
        time.sleep(0.1)


def test_a_flood_is_deleted_unread_past_the_rate(
    system: SimulatedSystem, admin: redis.Redis
) -> None:
    assert system.flux is not None
    with root_on(system, admin, "compute60") as node:
        pipe = node.client.pipeline(transaction=False)
        for n in range(3 * RATE + 500):  # past the rate in one minute, however slow the reader
            pipe.xadd(answers_key(system, "compute60"), {"task": "x", "n": n})
        pipe.execute()
        # read as they come or found held all at once, the flood is more than a node answers
        flagged_for(system, "compute60", f"more than {RATE}")
    deadline = time.monotonic() + 60
    while admin.xlen(answers_key(system, "compute60")):
        assert time.monotonic() < deadline, "the flood was never deleted"
        time.sleep(0.1)
    letters = [d for d in dead_letters(system, admin) if d.where.startswith("compute60:")]
    assert len(letters) <= 53  # fifty a node an hour, and one a minute that says the rate
    jobid = system.flux.submit(nodes(2))
    assert system.flux.wait_inactive([jobid], 120)
    assert system.flux.job(jobid).result == "COMPLETED"


def test_an_entry_larger_than_any_answer_is_set_aside_unread(
    system: SimulatedSystem, admin: redis.Redis
) -> None:
    with root_on(system, admin, "compute59") as node:
        node.client.xadd(answers_key(system, "compute59"), {"task": "x", "body": b"y" * 2**20})
        flagged_for(system, "compute59", "over answer_max_bytes: set aside unread")
    [letter] = [d for d in dead_letters(system, admin) if d.where == "compute59:answers"]
    assert letter.raw.endswith("bytes, unread") and letter.size < 100

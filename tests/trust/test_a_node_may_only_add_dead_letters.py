"""Dead letters are the management side's: a node may neither trim the list, nor set or
raise the count, nor push onto the list. What a node sets aside goes onto its own answers
stream, and the reader keeps it among the dead letters under the node's name; past fifty
an hour, a node's garbage is not kept (the node is flagged instead), so it cannot push
the other dead letters out of the thousand kept."""

from __future__ import annotations

import time

import pytest
import redis
from coral2_sim.system import SimulatedSystem

from pipeline.model.deadletter import count_key, list_key
from pipeline.platform.deadletters import NODE_DEAD_LETTER
from tests.trust.conftest import Attacker, answers_key, dead_letters, new_dead_letter, root_on


@pytest.mark.parametrize(
    "command",
    [
        ("LTRIM", "{list}", "0", "0"),
        ("LPUSH", "{list}", "forged"),
        ("DEL", "{list}"),
        ("SET", "{count}", "0"),
        ("INCRBY", "{count}", "-5"),
    ],
    ids=lambda c: c[0],
)
def test_the_list_and_its_count_are_refused(
    system: SimulatedSystem, attacker: Attacker, command: tuple[str, ...]
) -> None:
    keys = {"{list}": list_key(system.prefix), "{count}": count_key(system.prefix)}
    with pytest.raises(redis.exceptions.NoPermissionError):
        attacker.client.execute_command(*(keys.get(part, part) for part in command))


def test_its_own_dead_letter_is_kept_under_its_name(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker
) -> None:
    before = len(dead_letters(system, admin))
    entry = {"task": NODE_DEAD_LETTER, "where": "node.compute63", "raw": "junk", "reason": "r"}
    attacker.client.xadd(answers_key(system), entry)  # type: ignore[arg-type]
    letter = new_dead_letter(system, admin, before)
    assert (letter.where, letter.raw, letter.reason) == ("compute63:node.compute63", "junk", "r")


def test_a_nodes_garbage_is_kept_fifty_times_an_hour_then_flagged(
    system: SimulatedSystem, admin: redis.Redis
) -> None:
    assert system.store is not None
    with root_on(system, admin, "compute61") as node:
        for n in range(80):
            entry = {"task": NODE_DEAD_LETTER, "where": "q", "raw": f"junk {n}", "reason": "r"}
            node.client.xadd(answers_key(system, "compute61"), entry)  # type: ignore[arg-type]
        wait_for_flag(system, "compute61")
    kept = [d for d in dead_letters(system, admin) if d.where == "compute61:q"]
    assert len(kept) == 50
    assert "wrote 50 bad entries in an hour" in system.store.answers.flagged()["compute61"][1]


def wait_for_flag(system: SimulatedSystem, host: str, timeout_s: float = 60) -> None:
    assert system.store is not None
    deadline = time.monotonic() + timeout_s
    while host not in system.store.answers.flagged():
        assert time.monotonic() < deadline, f"{host} was never flagged"
        time.sleep(0.1)

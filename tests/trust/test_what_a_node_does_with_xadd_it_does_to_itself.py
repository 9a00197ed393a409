"""Redis's ACLs cannot limit XADD's arguments, so a node's right is on its own stream
alone: an entry with the last ID there is (which refuses every later XADD) or ``MAXLEN 0``
spoils only its own answers. Another node's stream, the bell that wakes the reader and the
management side's writes are out of its reach; the reader deletes a stream that can no
longer take an answer, says so in a dead letter, and ``status`` names the node."""

from __future__ import annotations

import time

import pytest
import redis
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import nodes
from tests.trust.conftest import ATTACKER, Attacker, answers_key, dead_letters, new_dead_letter

LAST = "18446744073709551615-18446744073709551615"


def test_another_nodes_stream_and_the_bell_are_refused(
    system: SimulatedSystem, attacker: Attacker
) -> None:
    with pytest.raises(redis.exceptions.NoPermissionError):
        attacker.client.xadd(answers_key(system, "compute05"), {"task": "job.prolog_done"})
    with pytest.raises(redis.exceptions.NoPermissionError):
        attacker.client.xadd(f"{system.prefix}:answers-bell", {"at": "0"}, maxlen=0)
    with pytest.raises(redis.exceptions.NoPermissionError):
        attacker.client.xadd(f"{system.prefix}:answers", {"task": "job.prolog_done"})


def test_the_last_id_spoils_only_its_own_stream_and_is_mended(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker
) -> None:
    assert system.flux is not None
    before = len(dead_letters(system, admin))
    attacker.client.xadd(answers_key(system), {"task": "x"}, id=LAST)
    with pytest.raises(redis.exceptions.ResponseError, match="exhausted the last possible ID"):
        attacker.client.xadd(answers_key(system), {"task": "x"})
    letter = new_dead_letter(system, admin, before)
    assert "past which no answer can be added: the stream was deleted" in letter.reason
    deadline = time.monotonic() + 30
    while admin.exists(answers_key(system)):
        assert time.monotonic() < deadline, "the spoiled stream was never deleted"
        time.sleep(0.1)
    assert attacker.client.xadd(answers_key(system), {"task": "x"})  # its own works again
    jobid = system.flux.submit(nodes(2))  # and every other node's answers were counted
    assert system.flux.wait_inactive([jobid], 120)
    assert system.flux.job(jobid).result == "COMPLETED"
    assert ATTACKER in (system.store.answers.flagged() if system.store else {})


def test_maxlen_zero_and_minid_trim_only_its_own_stream(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker
) -> None:
    before = len(dead_letters(system, admin))
    admin.xadd(answers_key(system, "compute05"), {"task": "kept"})  # compute05's, unread
    attacker.client.xadd(answers_key(system), {"task": "x"}, maxlen=0)
    attacker.client.xadd(answers_key(system), {"task": "x"}, minid="99999999999999")
    # compute05's entry outlived both: the reader read it (it is no answer: a dead letter)
    letter = new_dead_letter(system, admin, before)
    while letter.where != "compute05:answers":
        before += 1
        letter = new_dead_letter(system, admin, before)
    assert "'kept' is not a node answer" in letter.reason

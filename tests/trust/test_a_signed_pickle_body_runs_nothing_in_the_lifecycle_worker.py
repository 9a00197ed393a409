"""A body signed with a node's key (or the management key) whose inner content type is
pickle is never unpickled: the lifecycle worker reads the envelope, verifies the signer and
refuses every content type but JSON before any deserializer runs — an answer appended to
the answers stream, or a task on a queue. The attempt is a dead letter; the command inside
never runs."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
import redis
from coral2_sim.system import SimulatedSystem

from tests.trust.conftest import Attacker, answers_key, dead_letters, new_dead_letter
from tests.trust.forge import forge, forge_answer


class Exploit:
    """Unpickled, it runs a command that leaves ``marker`` behind."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("content_type", ["application/x-python-serialize", "application/x-yaml"])
def test_a_node_signed_pickle_appended_as_an_answer_is_a_dead_letter(
    system: SimulatedSystem,
    admin: redis.Redis,
    attacker: Attacker,
    tmp_path: Path,
    content_type: str,
) -> None:
    marker = tmp_path / "pwned"
    payload = pickle.dumps(Exploit(marker))
    entry = forge_answer(
        attacker.key,
        attacker.cert,
        "job.prolog_done",
        lambda _claim: payload,
        content_type=content_type,
    )
    before = len(dead_letters(system, admin))
    attacker.client.xadd(answers_key(system), entry)  # type: ignore[arg-type]
    letter = new_dead_letter(system, admin, before)
    assert f"content type {content_type!r}" in letter.reason
    assert "compute63" in letter.reason  # the signer it claimed
    assert not marker.exists()


def test_the_management_key_cannot_sign_a_pickle_either(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    keys = system.workdir / "keys"
    management_key = keys / "coral2-pipeline management.key"
    management_cert = keys / "coral2-pipeline management.crt"
    payload = pickle.dumps(Exploit(marker))
    raw = forge(
        management_key,
        management_cert,
        "housekeeping.ping",
        "lifecycle",
        lambda _claim: payload,
        content_type="application/x-python-serialize",
    )
    before = len(dead_letters(system, admin))
    admin.lpush("lifecycle", raw)  # pushed by whoever holds a user that may
    letter = new_dead_letter(system, admin, before)
    assert "only application/json" in letter.reason
    assert not marker.exists()

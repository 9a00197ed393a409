"""A job's verdict and its wake-up list are the management side's: no node may read,
take or overwrite them (one SET of the wake-up list used to fail any job's prolog). With
``node_prologs``, each node reads the copy written for it alone, and what it does there
touches only its own prolog."""

from __future__ import annotations

import pytest
import redis
from coral2_sim.system import SimulatedSystem

from tests.trust.conftest import ATTACKER, Attacker

JOBID = 818181


@pytest.mark.parametrize(
    ("command", "key"),
    [
        (("SET", "{p}:release-wake:818181", "x"), "job-wide wake-up"),
        (("BLPOP", "{p}:release-wake:818181", "0.01"), "job-wide wake-up"),
        (("GET", "{p}:release:818181"), "job-wide verdict"),
        (("GET", "{p}:release:compute05:818181"), "compute05's verdict"),
        (("BLPOP", "{p}:release-wake:compute05:818181", "0.01"), "compute05's wake-up"),
        (("SET", "{p}:release-wake:compute05:818181", "x"), "compute05's wake-up"),
    ],
    ids=lambda value: value if isinstance(value, str) else value[0],
)
def test_every_other_verdict_key_is_refused(
    system: SimulatedSystem, attacker: Attacker, command: tuple[str, ...], key: str
) -> None:
    filled = [part.replace("{p}", system.prefix) for part in command]
    with pytest.raises(redis.exceptions.NoPermissionError):
        attacker.client.execute_command(*filled)


def test_its_own_copy_is_readable_and_the_job_wide_verdict_untouched(
    system: SimulatedSystem, admin: redis.Redis, attacker: Attacker
) -> None:
    assert system.store is not None
    system.store.releases.put(JOBID, 0, "", hosts=[ATTACKER, "compute05"])
    own = attacker.client.get(f"{system.prefix}:release:{ATTACKER}:{JOBID}")
    assert own is not None and b'"status": 0' in own
    wake = f"{system.prefix}:release-wake:{ATTACKER}:{JOBID}"
    assert attacker.client.blpop([wake], timeout=1) == (wake.encode(), b"1")  # its own
    attacker.client.rpush(wake, "1")  # passed on
    with pytest.raises(redis.exceptions.NoPermissionError):  # but never made a string
        attacker.client.set(wake, "x")
    verdict = system.store.releases.get(JOBID)
    assert verdict is not None and verdict.status == 0
    assert system.store.releases.get(JOBID, "compute05") == verdict

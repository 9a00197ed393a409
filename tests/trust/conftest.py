"""The attacker's position: root on one compute node (compute63), so that node's Redis user
and signing key, against a whole simulated system run as production runs it — a Redis
user per role, signing on, the lifecycle worker and a node worker serving every compute.
One system for the package; each test file makes one attack."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from coral2_sim.system import SimulatedSystem

from pipeline.model.deadletter import DeadLetter, list_key
from pipeline.platform.acl import node_user, rules
from pipeline.platform.sending import settings_of
from pipeline.platform.signing import secure
from pipeline.settings import load_settings
from tests.e2e.conftest import start_system

ATTACKER = "compute63"


@dataclass
class Attacker:
    """What root on a compute node holds: its Redis user and its signing key."""

    host: str
    client: redis.Redis
    key: Path
    cert: Path


@pytest.fixture(scope="package")
def system() -> Iterator[SimulatedSystem]:
    # a node's unasked entries are found within 2 s, not the default 30 (what the tests
    # here write is unasked)
    scan = {"CORAL2_PIPELINE_PIPELINE__ANSWERS_SCAN_EVERY": "2"}
    sim = start_system(slingshot=True, signing=True, acl=True, extra_env=scan)
    yield sim
    sim.stop()


@pytest.fixture(autouse=True)
def signing_as_the_system(system: SimulatedSystem) -> None:
    """Sign with this package's system's key: kombu's serializer registry is one per
    process, as Celery has it, so a system another module started in this process since
    (the tests run a module at a time per process) would otherwise have the in-process
    senders (the simulated job manager's hooks) sign with its own key, which this system's
    workers refuse."""
    assert system.app is not None
    secure(system.app, settings_of(system.app).pipeline)


@pytest.fixture(scope="package")
def admin(system: SimulatedSystem) -> Iterator[redis.Redis]:
    assert system.redis is not None and system.users is not None
    user, password = system.users.admin
    with redis.Redis(port=system.redis.port, username=user, password=password) as client:
        yield client


@contextlib.contextmanager
def root_on(system: SimulatedSystem, admin: redis.Redis, host: str) -> Iterator[Attacker]:
    """``host``'s own Redis user, as ``coral2-pipeline redis-acl --nodes`` makes it, and
    ``host``'s key, as ``coral2-pipeline node-cert`` issued it."""
    settings = load_settings(env={k: v for k, v in system.env().items() if "CORAL2_" in k})
    user = node_user(host)
    admin.execute_command(
        "ACL", "SETUSER", user, "reset", "on", ">stolen", *rules("node", settings, [host]).split()
    )
    assert system.redis is not None
    with redis.Redis(port=system.redis.port, username=user, password="stolen") as client:
        nodes = system.workdir / "keys" / "nodes"
        yield Attacker(host, client, nodes / f"{host}.key", nodes / f"{host}.crt")


@pytest.fixture(scope="package")
def attacker(system: SimulatedSystem, admin: redis.Redis) -> Iterator[Attacker]:
    """Root on compute63: its own Redis user and its key."""
    with root_on(system, admin, ATTACKER) as held:
        yield held


def answers_key(system: SimulatedSystem, host: str = ATTACKER) -> str:
    """The stream ``host``'s answers are appended to (the attacker's own by default)."""
    return f"{system.prefix}:answers:{host}"


def dead_letters(system: SimulatedSystem, admin: redis.Redis) -> list[DeadLetter]:
    """Every dead letter kept, newest first."""
    raw = admin.lrange(list_key(system.prefix), 0, -1)
    return [DeadLetter.model_validate_json(item) for item in raw]


def new_dead_letter(
    system: SimulatedSystem, admin: redis.Redis, before: int, timeout_s: float = 60
) -> DeadLetter:
    """The first dead letter set aside after there were ``before``."""
    deadline = time.monotonic() + timeout_s
    while len(letters := dead_letters(system, admin)) <= before:
        assert time.monotonic() < deadline, "no dead letter was set aside"
        time.sleep(0.05)
    return letters[len(letters) - before - 1]

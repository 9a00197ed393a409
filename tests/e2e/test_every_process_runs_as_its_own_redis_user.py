"""With a Redis user per role, as production runs it, the whole pipeline works and Redis
refuses nothing: the workers and beat as management, the watcher as watcher, the node
worker as node — each logged in as its own user, signing on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import nodes, start_system


@pytest.fixture(scope="module")
def system() -> Iterator[SimulatedSystem]:
    sim = start_system(slingshot=True, signing=True, acl=True)
    yield sim
    sim.stop()


def test_jobs_with_rabbits_and_vnis_complete_and_redis_refuses_no_process(
    system: SimulatedSystem,
) -> None:
    assert system.flux is not None
    xfs = "#DW jobdw type=xfs capacity=10GiB name=scratch"
    lustre = "#DW jobdw type=lustre capacity=100GiB name=shared"
    jobids = [
        system.flux.submit(nodes(2), system={"dw": dw} if dw else {}) for dw in (xfs, lustre, None)
    ]
    assert system.flux.wait_inactive(jobids, 90)
    assert [system.flux.job(j).result for j in jobids] == ["COMPLETED"] * 3, [
        system.flux.job(j).exceptions for j in jobids
    ]
    assert system.acl_denials() == []


def test_each_process_is_logged_in_as_its_roles_user(system: SimulatedSystem) -> None:
    assert system.redis is not None and system.users is not None
    user, password = system.users.admin
    with redis.Redis(port=system.redis.port, username=user, password=password) as admin:
        users = {c["user"] for c in admin.client_list()}
    assert {"management", "watcher", "node"} <= users
    assert "default" not in users


def test_nobody_gets_in_without_a_password(system: SimulatedSystem) -> None:
    assert system.redis is not None
    with (
        redis.Redis(port=system.redis.port) as anonymous,
        pytest.raises((redis.AuthenticationError, redis.ResponseError)),
    ):
        anonymous.get("anything")

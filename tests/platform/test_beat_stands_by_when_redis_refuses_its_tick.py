"""Beat never dies of a Redis error: when Redis refuses its tick after granting the lease
(a connection reset, a refusal), it stands by for that round and says why, and leads
again once Redis takes it. (A beat that died of it sent no sweep and no redelivery for
the rest of a chaos run, and two jobs were lost.)"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from coral2_sim.redis_server import RedisServer

from pipeline.platform.acl import acl_file
from pipeline.platform.app import create_app
from pipeline.platform.beat import LeaderScheduler
from pipeline.settings import load_settings
from pipeline.store import Keys

PREFIX = "tickless"
KEYS = Keys(PREFIX)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis whose ``beat`` user may hold the lease but not write the tick."""
    rules = {"management": "m"}
    settings = load_settings(env={"CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": PREFIX})
    lines = acl_file(settings, rules, admin="a").splitlines()
    lines.append(f"user beat reset on >b ~{KEYS.beat_leader} +@all -@admin -@dangerous")
    (tmp_path / "users.acl").write_text("\n".join(lines) + "\n")
    with RedisServer(tmp_path, aclfile=tmp_path / "users.acl", login=("admin", "a")) as redis_:
        yield redis_


def scheduler(server: RedisServer, user: str, password: str, tmp_path: Path) -> LeaderScheduler:
    url = server.url.replace("redis://", f"redis://{user}:{password}@")
    settings = load_settings(
        env={
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": url,
            "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": PREFIX,
        }
    )
    app = create_app(settings, set_current=False)
    return LeaderScheduler(app=app, schedule_filename=str(tmp_path / "schedule"), lazy=True)


def test_a_refused_tick_stands_beat_by_without_a_crash(
    server: RedisServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="coral2_pipeline.beat")  # whatever set the root's
    beat = scheduler(server, "beat", "b", tmp_path)
    wait = beat.tick()
    assert wait == pytest.approx(beat.lease_s / 3)
    assert beat.leading is False
    assert "cannot reach Redis for the lease" in caplog.text


def test_a_beat_whose_tick_redis_takes_leads(server: RedisServer, tmp_path: Path) -> None:
    beat = scheduler(server, "management", "m", tmp_path)
    beat.setup_schedule()
    beat.tick()
    assert beat.leading is True

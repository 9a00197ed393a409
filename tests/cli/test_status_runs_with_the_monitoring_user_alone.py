"""`coral2-pipeline status` runs as the monitoring role's Redis user, which may only read:
every read it makes is allowed (no NOPERM, nothing in Redis's ACL log), the verdict is
the one the management user gets, and it writes nothing."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from coral2_sim.redis_server import RedisServer

from pipeline.platform.acl import acl_file
from pipeline.settings import load_settings
from pipeline.store import JobRecord, OutboxMessage, Store
from tests.cli.status_helpers import Status

PREFIX = "monitored"


@pytest.fixture
def acl_redis(tmp_path: Path) -> Iterator[tuple[RedisServer, dict[str, str]]]:
    settings = load_settings(env={"CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": PREFIX})
    passwords = {"management": secrets.token_urlsafe(12), "monitoring": secrets.token_urlsafe(12)}
    admin = secrets.token_urlsafe(12)
    aclfile = tmp_path / "users.acl"
    aclfile.write_text(acl_file(settings, passwords, admin=admin))
    server = RedisServer(tmp_path, aclfile=aclfile, login=("admin", admin)).start()
    yield server, {**passwords, "admin": admin}
    server.stop()


def url(server: RedisServer, user: str, password: str) -> str:
    return server.url.replace("redis://", f"redis://{user}:{password}@", 1)


def test_the_monitoring_user_reads_everything_status_needs(
    acl_redis: tuple[RedisServer, dict[str, str]],
    status: Status,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, passwords = acl_redis
    store = Store.from_url(url(server, "management", passwords["management"]), PREFIX)
    now = time.time()
    store.jobs.create(JobRecord(jobid=4, state="Proposal:ready", observed_at=now, observed_rv="7"))
    store.outbox.append(OutboxMessage("memo", 4, {"id": 4, "memo": {"rabbits": "rabbit1"}}))
    store.ledger.note("t", "dws.setup", {"jobid": 4}, now=now - 600, resend_after_s=30)
    store.client.set(store.keys.watcher_leader, "watcher-a", px=60_000)
    store.client.set(store.keys.beat_tick, f"{now} beat-a")
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__KEY_PREFIX", PREFIX)
    monkeypatch.delenv("CORAL2_PIPELINE_PIPELINE__REDIS_URL", raising=False)
    verdicts = {}
    for user in ("management", "monitoring"):
        monkeypatch.setenv(
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL", url(server, user, passwords[user])
        )
        code, out, err = status("--json")
        assert err == "", err
        verdicts[user] = (code, json.loads(out)["flags"])
        code, out, _ = status("-j", "4")
        assert code in (0, 1) and not out.startswith("CRITICAL"), out
    assert verdicts["monitoring"] == verdicts["management"]
    assert verdicts["monitoring"][0] == 1  # the old sent task: a WARNING, read alike
    admin = redis.Redis.from_url(url(server, "admin", passwords["admin"]))
    assert admin.execute_command("ACL", "LOG") == []
    store.close()
    admin.close()

"""A Redis that refuses the command's user (a wrong password, a command its ACL does not
grant) is not a Redis that cannot be reached: the command says Redis refused the user and
where to look, and exits 3 (the settings) — 4 stays for a Redis that does not answer."""

from __future__ import annotations

import os
import subprocess
import sys
from urllib.parse import urlsplit


def run(url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CORAL2_PIPELINE_PIPELINE__BROKER_URL": url}
    env.pop("CORAL2_PIPELINE_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "deadletters"],
        capture_output=True, text=True, env=env, check=False, timeout=60,
    )  # fmt: skip


def test_a_wrong_password_exits_3_naming_the_refusal(redis_url: str) -> None:
    where = urlsplit(redis_url)
    done = run(f"redis://nobody:wrong@{where.hostname}:{where.port}/0")
    assert done.returncode == 3, done.stderr
    assert "Redis refused this user" in done.stderr and "redis-acl" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_redis_that_does_not_answer_exits_4() -> None:
    done = run("redis://127.0.0.1:1/0")
    assert done.returncode == 4, done.stderr
    assert "Redis unavailable" in done.stderr

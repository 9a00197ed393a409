"""Fixtures: beats (``celery beat`` with our leader scheduler) started on the session's
Redis under a key prefix of the test's own; ``start(extra_env)`` starts one more."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipeline.store import Keys

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def keys() -> Keys:
    return Keys(f"beat-{uuid.uuid4().hex[:8]}")


@pytest.fixture
def beats(
    redis_url: str, keys: Keys, tmp_path: Path
) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")}
    env["CORAL2_PIPELINE_PIPELINE__BROKER_URL"] = redis_url
    env["CORAL2_PIPELINE_PIPELINE__KEY_PREFIX"] = keys.prefix
    env["CORAL2_PIPELINE_PIPELINE__BEAT_LEASE"] = "1.5"
    env["CORAL2_PIPELINE_PIPELINE__QUEUES__LIFECYCLE"] = f"{keys.prefix}-l"  # nobody reads
    env["CORAL2_PIPELINE_PIPELINE__QUEUES__TIMEOUTS"] = f"{keys.prefix}-t"
    env["CORAL2_PIPELINE_PIPELINE__QUEUES__HOUSEKEEPING"] = f"{keys.prefix}-h"
    started: list[subprocess.Popen[bytes]] = []

    def start(extra_env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        n = len(started)
        argv = [sys.executable, "-m", "celery", "-A", "pipeline.app", "beat"]
        argv += ["-s", str(tmp_path / f"schedule-{n}"), "--loglevel=WARNING"]
        with (tmp_path / f"beat-{n}.log").open("wb") as log:
            proc = subprocess.Popen(
                argv,
                env={**env, **(extra_env or {})},
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
            )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.send_signal(signal.SIGCONT)
        proc.terminate()
    for proc in started:
        proc.wait(timeout=30)

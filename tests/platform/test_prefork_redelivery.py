"""A prefork worker whose child is SIGKILLed mid-task: the task is redelivered, completes once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import redis
from celery import Celery

ROOT = Path(__file__).resolve().parents[2]


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def wait_for(predicate, what: str, timeout_s: float = 90) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_a_sigkilled_child_task_is_redelivered_and_completes_once(
    redis_url: str, tmp_path: Path
) -> None:
    # a database of its own, so the in-process threads worker of other tests cannot take the task
    redis_url = redis_url.rsplit("/", 1)[0] + "/1"
    prefix = f"prefork{uuid.uuid4().hex[:6]}"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_url,
        "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": prefix,
    }
    env.pop("CORAL2_PIPELINE_CONFIG", None)
    log = (tmp_path / "worker.log").open("w")
    worker = subprocess.Popen(
        [
            sys.executable, "-m", "celery", "-A", "pipeline.app", "worker",
            "--pool=prefork", "--concurrency=1", "-Q", "housekeeping",
            "--include", "tests.platform.probe_tasks", "--without-gossip", "--without-mingle",
            "--loglevel=WARNING", "-n", f"{prefix}@%h",
        ],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    client = redis.Redis.from_url(redis_url)
    key = f"{prefix}:slow"
    try:
        # a plain sender app, not the current one: the in-process worker of other tests must
        # not see it
        app = Celery("sender", broker=redis_url, set_as_current=False)
        app.send_task("probe.slow_once", args=[key], queue="housekeeping")
        wait_for(lambda: client.get(key + ":starts") == b"1", "the first start")
        children = children_of(worker.pid)
        assert children, "the prefork worker has no child process"
        for child in children:
            os.kill(child, signal.SIGKILL)
        wait_for(lambda: client.get(key + ":done") == b"1", "the redelivered run to finish")
        time.sleep(1.0)
        assert client.get(key + ":starts") == b"2"
        assert client.get(key + ":done") == b"1"
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        log.close()
        client.close()

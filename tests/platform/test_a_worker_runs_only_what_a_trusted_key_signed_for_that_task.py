"""With signing on, a lifecycle worker runs a task only when a key it trusts signed that very
task: the management key for any task, a node's key for a node's answers alone. Unsigned
messages, bodies replayed under another task's name, and a node's key signing anything
else are refused, set aside as dead letters, and nothing of them runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from coral2_sim.keys import Signer, demo_signers

from pipeline.model.deadletter import DeadLetter, list_key
from pipeline.model.job import JobRecord, Slingshot
from pipeline.store import Store

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Signer, Signer]:
    management, node = demo_signers(tmp_path_factory.mktemp("keys"), ["n1"])
    return management, node.of("n1")


@pytest.fixture(scope="module")
def base_env(redis_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")}
    env["CORAL2_PIPELINE_PIPELINE__BROKER_URL"] = redis_url
    tag = uuid.uuid4().hex[:8]
    env["CORAL2_PIPELINE_PIPELINE__KEY_PREFIX"] = f"roles-{tag}"
    # queues of its own: the session's test worker serves the default names
    env["CORAL2_PIPELINE_PIPELINE__QUEUES__LIFECYCLE"] = f"lifecycle-{tag}"
    env["CORAL2_PIPELINE_PIPELINE__QUEUES__HOUSEKEEPING"] = f"housekeeping-{tag}"
    env["CORAL2_PIPELINE_PIPELINE__API_HOST"] = "http://127.0.0.1:9"  # no Workflow is asked for
    return env


@pytest.fixture(scope="module")
def worker(
    keys: tuple[Signer, Signer], base_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    argv = [sys.executable, "-m", "celery", "-A", "pipeline.app", "worker", "--pool=threads"]
    queues = f"{base_env['CORAL2_PIPELINE_PIPELINE__QUEUES__LIFECYCLE']},"
    queues += base_env["CORAL2_PIPELINE_PIPELINE__QUEUES__HOUSEKEEPING"]
    argv += ["-Q", queues, "--concurrency=2", "--without-mingle"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, env={**base_env, **keys[0].env()}, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT
        )
    try:
        assert send(base_env, keys[0], "housekeeping.ping", {"token": "up"}, wait=120) == "up"
        yield log
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def send(
    env: dict[str, str], signer: Signer | None, name: str, kwargs: object, wait: float = 0
) -> str:
    logical = "HOUSEKEEPING" if name.startswith("housekeeping") else "LIFECYCLE"
    queue = env[f"CORAL2_PIPELINE_PIPELINE__QUEUES__{logical}"]
    argv = [sys.executable, "-m", "tests.platform.send_signed", name, queue, json.dumps(kwargs)]
    argv += ["--wait", str(wait)] if wait else []
    full = {**env, **(signer.env() if signer else {})}
    done = subprocess.run(
        argv, check=False, env=full, cwd=ROOT, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def refused(env: dict[str, str], redis_url: str, count: int) -> list[DeadLetter]:
    client = redis.Redis.from_url(redis_url)
    key = list_key(env["CORAL2_PIPELINE_PIPELINE__KEY_PREFIX"])
    deadline = time.monotonic() + 30
    while client.llen(key) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return [DeadLetter.model_validate_json(raw) for raw in client.lrange(key, 0, -1)]


def test_the_management_key_runs_any_task(
    worker: Path, keys: tuple[Signer, Signer], base_env: dict[str, str]
) -> None:
    assert send(base_env, keys[0], "housekeeping.ping", {"token": "hi"}, wait=30) == "hi"


def test_a_node_key_cannot_sign_anything_but_a_node_answer(
    worker: Path, keys: tuple[Signer, Signer], base_env: dict[str, str], redis_url: str
) -> None:
    before = len(refused(base_env, redis_url, 0))
    assert send(base_env, keys[1], "housekeeping.ping", {"token": "x"}, wait=3) == "no answer"
    forged = {"jobid": 7, "userid": 0, "dw": ["#DW create_persistent name=p capacity=1GiB"]}
    send(base_env, keys[1], "dws.create", forged)
    letters = refused(base_env, redis_url, before + 2)
    reasons = [letter.reason for letter in letters[: len(letters) - before]]
    assert sum("n1's node key may sign only" in r for r in reasons) == 2, reasons


def test_a_node_key_signs_its_answers(
    worker: Path, keys: tuple[Signer, Signer], base_env: dict[str, str], redis_url: str
) -> None:
    store = Store.from_url(redis_url, base_env["CORAL2_PIPELINE_PIPELINE__KEY_PREFIX"])
    record = JobRecord(
        jobid=77, userid=1001, slingshot=Slingshot(vnis=[1030], nodes=["n1"], released=True)
    )
    store.jobs.create(record)
    store.tally.expect(77, 1, "clean")  # what the job's CLEANUP notes before its epilogs
    answer = {"jobid": 77, "node": "n1", "task_id": "t-1", "busy": []}
    send(base_env, keys[1], "job.epilog_done", answer)
    deadline = time.monotonic() + 30
    while True:
        stored = store.jobs.get(77)
        if stored is not None and stored.slingshot is not None and stored.slingshot.clean:
            break
        assert time.monotonic() < deadline, stored
        time.sleep(0.05)
    assert stored.slingshot.clean == ["n1"]


def test_unsigned_and_replayed_messages_are_refused(
    worker: Path, keys: tuple[Signer, Signer], base_env: dict[str, str], redis_url: str
) -> None:
    client = redis.Redis.from_url(redis_url)
    before = len(refused(base_env, redis_url, 0))
    assert send(base_env, None, "housekeeping.ping", {"token": "plain"}, wait=3) == "no answer"
    # a management-signed body taken off a queue and pushed again under another task's name
    park = [sys.executable, "-m", "tests.platform.send_signed", "housekeeping.ping", "parked"]
    env = {**base_env, **keys[0].env()}
    subprocess.run([*park, '{"token": "t"}'], env=env, cwd=ROOT, check=True, timeout=180)
    envelope = json.loads(client.rpop("parked") or b"{}")
    envelope["headers"]["task"] = "dws.teardown"
    client.lpush(base_env["CORAL2_PIPELINE_PIPELINE__QUEUES__LIFECYCLE"], json.dumps(envelope))
    letters = refused(base_env, redis_url, before + 2)
    reasons = [letter.reason for letter in letters[: len(letters) - before]]
    assert any("Refusing to deserialize untrusted content" in r for r in reasons), reasons
    assert all("claimed signer" in r for r in reasons), reasons
    assert any("signature was made for" in r and "dws.teardown" in r for r in reasons), reasons

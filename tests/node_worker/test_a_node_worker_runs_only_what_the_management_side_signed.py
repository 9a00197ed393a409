"""With signing on, a node worker runs a task signed with the management key and refuses,
without running it, one that is unsigned or signed with any other key."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from coral2_sim.keys import Signer, demo_signers, key_pair

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Signer, Signer, Signer]:
    directory = tmp_path_factory.mktemp("keys")
    management, node = demo_signers(directory, ["n1"])
    rogue_key, rogue_cert = key_pair(directory, "rogue")
    rogue = Signer(rogue_key, rogue_cert, management.store)
    return management, node.of("n1"), rogue


@pytest.fixture(scope="module")
def base_env(redis_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")}
    env["CORAL2_PIPELINE_PIPELINE__BROKER_URL"] = redis_url
    env["CORAL2_PIPELINE_PIPELINE__KEY_PREFIX"] = f"sign-{uuid.uuid4().hex[:8]}"
    return env


@pytest.fixture(scope="module")
def worker(
    keys: tuple[Signer, Signer, Signer],
    base_env: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Path]:
    log = tmp_path_factory.mktemp("worker") / "node-worker.log"
    argv = [sys.executable, "-m", "pipeline.cli", "node-worker", "--hostname", "n1"]
    argv += ["--backend", "systemd", "--nic", "simulated", "-v"]
    argv += ["--state-dir", str(log.parent / "state")]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, env={**base_env, **keys[1].env()}, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT
        )
    try:
        yield log
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def ping(env: dict[str, str], *extra: str) -> str:
    argv = [sys.executable, "-m", "tests.node_worker.send_ping", "n1", *extra]
    done = subprocess.run(
        argv, check=False, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_task_signed_by_the_management_side_runs(
    worker: Path, keys: tuple[Signer, Signer, Signer], base_env: dict[str, str]
) -> None:
    answers = [ping({**base_env, **keys[0].env()}) for _ in range(3)]
    assert "n1" in answers  # the first may go out before the worker listens


def test_an_unsigned_task_is_refused_and_does_not_run(
    worker: Path, keys: tuple[Signer, Signer, Signer], base_env: dict[str, str]
) -> None:
    assert ping({**base_env, **keys[0].env()}) == "n1"  # the worker is up
    assert ping(base_env, "--unsigned") == "no answer"
    assert "untrusted content" in worker.read_text()


def test_a_task_signed_with_another_key_is_refused(
    worker: Path, keys: tuple[Signer, Signer, Signer], base_env: dict[str, str]
) -> None:
    assert ping({**base_env, **keys[0].env()}) == "n1"
    assert ping({**base_env, **keys[2].env()}) == "no answer"
    assert ping({**base_env, **keys[1].env()}) == "no answer"  # a node cannot task a node

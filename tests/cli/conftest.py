"""Fixtures of the ``coral2-pipeline status`` tests: a store the command reads, and the
command itself, its output captured."""

from __future__ import annotations

import pytest

from pipeline.cli import main
from pipeline.store import Store
from tests.cli.status_helpers import Status


@pytest.fixture
def aimed(monkeypatch: pytest.MonkeyPatch, redis_url: str, store: Store) -> Store:
    """``store``, which the command reads: its Redis and its key prefix."""
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__BROKER_URL", redis_url)
    monkeypatch.delenv("CORAL2_PIPELINE_PIPELINE__REDIS_URL", raising=False)
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__KEY_PREFIX", store.keys.prefix)
    return store


@pytest.fixture
def status(capsys: pytest.CaptureFixture[str]) -> Status:
    """``coral2-pipeline status ARGV`` → (exit status, stdout, stderr)."""

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(["status", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    return run

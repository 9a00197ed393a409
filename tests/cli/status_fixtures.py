"""Helpers for the ``coral2-pipeline status`` tests: point the command at a test store."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pipeline.cli import main
from pipeline.store import Store


def aim(monkeypatch: pytest.MonkeyPatch, redis_url: str, store: Store) -> None:
    """Make the command read ``store``: its Redis and its key prefix."""
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__BROKER_URL", redis_url)
    monkeypatch.delenv("CORAL2_PIPELINE_PIPELINE__REDIS_URL", raising=False)
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__KEY_PREFIX", store.keys.prefix)


def status(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``coral2-pipeline status ARGV``; return (exit status, stdout, stderr)."""
    code = main(["status", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def status_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    """Run it with ``--json``; return (exit status, the parsed object)."""
    code, out, err = status(capsys, *argv, "--json")
    assert err == "", err
    return code, json.loads(out)

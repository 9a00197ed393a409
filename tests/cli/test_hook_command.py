"""`coral2-pipeline hook` answers like coral2_dws and enqueues nothing it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from pipeline.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_a_refused_create_prints_the_errstr_and_enqueues_nothing(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broker = redis_url.rsplit("/", 1)[0] + "/3"
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__BROKER_URL", broker)
    payload = tmp_path / "create.json"
    payload.write_text(
        json.dumps(
            {"jobid": 1, "userid": 5, "dw_directives": 3, "resources": [], "failure_tolerance": 0}
        )
    )
    status, out, _ = run(
        capsys, "hook", "dws.create", "--payload", str(payload), "--owner-uid", "0"
    )
    assert status == 1
    assert json.loads(out) == {
        "success": False,
        "errstr": "Malformed #DW directives, not list or string: 3",
    }
    assert redis.Redis.from_url(broker).llen("lifecycle") == 0


def test_an_accepted_teardown_is_enqueued_on_the_lifecycle_queue(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broker = redis_url.rsplit("/", 1)[0] + "/4"
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__BROKER_URL", broker)
    payload = tmp_path / "teardown.json"
    payload.write_text('{"jobid": 12}')
    status, out, _ = run(capsys, "hook", "dws.teardown", "--payload", str(payload))
    assert (status, json.loads(out)) == (0, {"success": True})
    assert redis.Redis.from_url(broker).llen("lifecycle") == 1

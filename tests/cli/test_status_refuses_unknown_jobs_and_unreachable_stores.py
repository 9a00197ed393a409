"""`coral2-pipeline status` says in one line what is wrong, and never writes: as a Nagios
check, an unknown or malformed job is UNKNOWN (3) and an unreachable Redis CRITICAL (2),
on its first line of output."""

from __future__ import annotations

import pytest
from coral2_sim.redis_server import free_port

from pipeline.store import Store
from tests.cli.status_helpers import Status


def test_an_unknown_job_is_one_line_naming_the_retention(status: Status, aimed: Store) -> None:
    code, out, _ = status("-j", "123")
    assert code == 3
    assert out.startswith("UNKNOWN: no trace of job 123 in the job store")
    assert "pipeline.retention" in out
    assert aimed.client.keys(f"{aimed.keys.prefix}:*") == []  # nothing written


def test_a_malformed_jobid_says_which_forms_are_accepted(status: Status, aimed: Store) -> None:
    code, out, _ = status("-j", "ƒ0O")
    assert code == 3
    assert out.startswith("UNKNOWN: ") and "decimal or F58" in out
    assert len(out.strip().splitlines()) == 1


def test_an_unreachable_store_is_one_line_not_a_traceback(
    status: Status, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__BROKER_URL", f"redis://127.0.0.1:{free_port()}/0")
    monkeypatch.delenv("CORAL2_PIPELINE_PIPELINE__REDIS_URL", raising=False)
    code, out, _ = status()
    assert code == 2
    assert out.startswith("CRITICAL: Redis at redis://127.0.0.1:")
    assert "Redis unavailable" in out
    assert len(out.strip().splitlines()) == 1


def test_a_limit_below_one_is_refused(status: Status, aimed: Store) -> None:
    with pytest.raises(SystemExit) as exited:
        status("--limit", "0")
    assert exited.value.code == 3  # UNKNOWN, as the plugin guidelines want for bad usage

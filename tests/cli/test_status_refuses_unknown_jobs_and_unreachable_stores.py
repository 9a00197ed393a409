"""`coral2-pipeline status` says in one line what is wrong, and never writes."""

from __future__ import annotations

import pytest

from pipeline.sim.redis_server import free_port
from pipeline.store import Store
from tests.cli.status_helpers import Status


def test_an_unknown_job_is_one_line_naming_the_retention(status: Status, aimed: Store) -> None:
    code, out, err = status("-j", "123")
    assert (code, out) == (1, "")
    assert err.startswith("coral2-pipeline status: no trace of job 123 in the job store")
    assert "pipeline.retention" in err
    assert aimed.client.keys(f"{aimed.keys.prefix}:*") == []  # nothing written


def test_a_malformed_jobid_says_which_forms_are_accepted(status: Status, aimed: Store) -> None:
    code, _, err = status("-j", "ƒ0O")
    assert code == 1
    assert "decimal or F58" in err
    assert len(err.strip().splitlines()) == 1


def test_an_unreachable_store_is_one_line_not_a_traceback(
    status: Status, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__BROKER_URL", f"redis://127.0.0.1:{free_port()}/0")
    monkeypatch.delenv("CORAL2_PIPELINE_PIPELINE__REDIS_URL", raising=False)
    code, out, err = status()
    assert (code, out) == (1, "")
    assert err.startswith("coral2-pipeline status: Redis unavailable")
    assert len(err.strip().splitlines()) == 1


def test_a_limit_below_one_is_refused(status: Status, aimed: Store) -> None:
    code, _, err = status("--limit", "0")
    assert code == 1
    assert "--limit must be at least 1" in err

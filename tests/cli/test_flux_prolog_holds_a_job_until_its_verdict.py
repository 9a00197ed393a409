"""``coral2-pipeline flux-prolog``, the job-manager prolog, blocks until the pipeline's
verdict on the job: 0 when released, 1 with the cause when failed or not released in
time, and a clear line when it cannot tell which job it holds."""

from __future__ import annotations

import threading
import time

import pytest

from pipeline.cli import main
from pipeline.model.jobid import encode_f58
from pipeline.store import Store


def prolog(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["flux-prolog", *argv])
    return code, capsys.readouterr().err


def test_it_exits_0_once_the_job_is_released(
    aimed: Store, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLUX_JOB_ID", encode_f58(4242))
    released: list[float] = []

    def release() -> None:
        released.append(time.monotonic())
        aimed.releases.put(4242)

    timer = threading.Timer(0.3, release)
    timer.start()
    try:
        assert prolog(capsys) == (0, "")
        assert released  # it returned only once the verdict was written
    finally:
        timer.join(timeout=30)  # its write may still be reading Redis's answer


def test_a_failed_job_exits_1_with_the_cause(
    aimed: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    aimed.releases.put(4243, 1, "n2: no answer")
    code, err = prolog(capsys, "--jobid", "4243", "--grace", "0")
    assert code == 1
    assert err == "flux-prolog: n2: no answer\n"


def test_the_first_verdict_stands(aimed: Store, capsys: pytest.CaptureFixture[str]) -> None:
    aimed.releases.put(4244)
    aimed.releases.put(4244, 1, "too late")
    assert prolog(capsys, "--jobid", "4244")[0] == 0


def test_no_verdict_in_time_exits_1(aimed: Store, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = prolog(capsys, "--jobid", "4245", "--timeout", "0.2")
    assert code == 1
    assert "not released in 0.2 s" in err


def test_without_a_job_it_says_how_to_name_one(
    aimed: Store, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FLUX_JOB_ID", raising=False)
    code, err = prolog(capsys)
    assert code == 1
    assert "FLUX_JOB_ID is not set.  Try --jobid=ID." in err
    code, err = prolog(capsys, "--jobid", "not-a-job")
    assert code == 1 and "error parsing jobid" in err

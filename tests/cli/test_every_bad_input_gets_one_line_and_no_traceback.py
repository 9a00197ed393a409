"""Whatever a user or Flux hands the command line and the hooks — hook payloads of any
shape, any #DW text, any R on stdin, any jobid, hostlist or option value — the answer is
a clean exit: 0 or 1 with at most one line on stderr, or 2 with one line naming the
help for a usage error; never a traceback, never a hang (property-based, Hypothesis)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.cli import main

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
TEXT = st.text(max_size=60) | st.sampled_from(
    [
        "n[1-100000000]",
        "1" * 5000,
        "１２３",
        "ƒ" + "z" * 200,
        "#DW jobdw type=xfs capacity=1GiB name=x " * 300,
        "compute[01-02",
        "-1",
        "nan",
        "\udcff",
    ]
)
TOPICS = ["dws.create", "dws.setup", "dws.post_run", "dws.teardown", "dws.abort", "job-state"]
CHECKS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, redis_url: str) -> None:
    # a database and queues no worker or other test reads: an accepted hook's task waits
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__BROKER_URL", redis_url.rsplit("/", 1)[0] + "/6")
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__KEY_PREFIX", "fuzz")
    for queue in ("LIFECYCLE", "TIMEOUTS", "HOUSEKEEPING"):
        monkeypatch.setenv(f"CORAL2_PIPELINE_PIPELINE__QUEUES__{queue}", f"fuzz-{queue.lower()}")


def clean_exit(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    """Run ``coral2-pipeline ARGV``; assert the exit is clean; return (status, stderr)."""
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's usage error
        status = int(exc.code or 0)
        err = capsys.readouterr().err
        assert status == (3 if argv[0] == "status" else 2), (argv, err)  # Nagios: UNKNOWN
        assert len(err.strip().splitlines()) == 1 and "--help" in err, err
        return status, err
    err = capsys.readouterr().err
    assert status in (0, 1, 2, 3, 4), (argv, status, err)  # the documented statuses
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) <= 1, err
    return status, err


def write(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "input.json"
    path.write_bytes(data)
    return str(path)


@CHECKS
@given(topic=st.sampled_from(TOPICS), payload=JSON)
def test_any_hook_payload(
    env: None, capsys: pytest.CaptureFixture[str], tmp_path: Path, topic: str, payload: Any
) -> None:
    path = write(tmp_path, json.dumps(payload).encode())
    clean_exit(capsys, ["hook", topic, "--payload", path, "--owner-uid", "0"])


@CHECKS
@given(dw=TEXT | st.lists(TEXT, max_size=5), userid=st.integers(-5, 2**40))
def test_any_dw_directives(
    env: None, capsys: pytest.CaptureFixture[str], tmp_path: Path, dw: Any, userid: int
) -> None:
    payload = {
        "jobid": 1,
        "userid": userid,
        "dw_directives": dw,
        "resources": [{"type": "node", "count": 1}],
        "failure_tolerance": 0,
    }
    path = write(tmp_path, json.dumps(payload).encode())
    clean_exit(capsys, ["hook", "dws.create", "--payload", path, "--owner-uid", "0"])


RAW = st.binary(max_size=200) | st.sampled_from(
    [b"\xff\xfe", b"[" * 100_000, b"1" * 5000, b'{"version": 1, "execution": ' + b"[" * 5000]
)


@CHECKS
@given(raw=RAW)
def test_any_bytes_as_a_payload_file(
    env: None, capsys: pytest.CaptureFixture[str], tmp_path: Path, raw: bytes
) -> None:
    path = write(tmp_path, raw)
    status, _ = clean_exit(capsys, ["hook", "dws.setup", "--payload", path])
    assert status in (1, 3)  # 3: the file holds no JSON object; 1: the request is refused


@CHECKS
@given(r=JSON | RAW)
def test_any_r_on_stdin_for_dws2jgf(
    env: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, r: Any
) -> None:
    data = r if isinstance(r, bytes) else json.dumps(r).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    clean_exit(capsys, ["dws2jgf", "--no-validate"])


@CHECKS
@given(text=TEXT)
def test_any_jobid_hostlist_or_option_value(
    env: None, capsys: pytest.CaptureFixture[str], data_dir: Path, text: str
) -> None:
    mapping = str(data_dir / "rabbits.json")
    clean_exit(capsys, ["status", "-j", text])
    clean_exit(capsys, ["getrabbit", "--mapping", mapping, "-c", text])
    clean_exit(capsys, ["getrabbit", "--mapping", mapping, "-j", text])
    clean_exit(capsys, ["status", "--limit", text])
    clean_exit(capsys, ["deadletters", "--limit", text])
    clean_exit(capsys, ["slingshot", "env", "-j", text, "-n", "n1", "--timeout", "0.1"])

"""A generator feeds the options after ``--`` of ``worker``, ``beat`` and ``flower`` — the
options Celery and Tornado read — odd strings: control characters, values of the wrong
type, options without their value, thread counts no worker should start. Each is refused
before the service starts, in one line, exit 2, within the walker's bound."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.walker import run

#: a few examples of each, the same each run; ``make test-all`` runs more, at random
EXAMPLES = int(os.environ.get("CORAL2_BADINPUT_EXAMPLES", "0")) or None
CHECKS = settings(
    max_examples=EXAMPLES or 4,
    derandomize=EXAMPLES is None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
CONTROL = st.text(alphabet=st.characters(max_codepoint=31), min_size=1, max_size=3)
NOT_A_COUNT = st.one_of(
    st.sampled_from(["nan", "inf", "-1", "0", "99999999", "1e3", "", "٣", "0x10"]),
    st.integers(min_value=1001, max_value=2**70).map(str),
)
NOT_AN_INT = st.sampled_from(["nan", "inf", "1.5", "abc", "", "1e999"])
ODD = {
    "worker": st.one_of(
        NOT_A_COUNT.map(lambda v: [f"--concurrency={v}"]),
        NOT_A_COUNT.map(lambda v: ["-c", v]),
        NOT_AN_INT.map(lambda v: [f"--prefetch-multiplier={v}"]),
        st.sampled_from(["NOPE", "", "trace"]).map(lambda v: [f"--loglevel={v}"]),
        st.sampled_from([["-Q"], ["--hostname"], ["--no-such-option"]]),
        CONTROL.map(lambda c: [f"--hostname=a{c}b"]),
    ),
    "beat": st.one_of(
        st.sampled_from([["--max-interval=nan"], ["--no-such-option"], ["-l"]]),
        CONTROL.map(lambda c: [f"--pidfile=a{c}b"]),
    ),
    "flower": st.one_of(
        NOT_AN_INT.map(lambda v: [f"--max_tasks={v}"]),
        CONTROL.map(lambda c: [f"--address=a{c}b"]),
        st.sampled_from(["99999", "0", "nan"]).map(lambda v: [f"--port={v}"]),
    ),
}


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    for name in [n for n in os.environ if n.startswith("CORAL2_PIPELINE_")]:
        os.environ.pop(name)  # the child inherits these: none may point elsewhere
    schedule = tmp_path / "beat"
    schedule.mkdir()
    yield {
        "CORAL2_PIPELINE_PIPELINE__BROKER_URL": "redis://127.0.0.1:1/0",  # refused at once
        "FLOWER_BASIC_AUTH": "admin:secret",
        "STATE_DIRECTORY": str(schedule),
        "HOME": str(tmp_path),
    }


@pytest.mark.parametrize("service", sorted(ODD))
@CHECKS
@given(data=st.data())
def test_an_odd_option_is_one_usage_line(
    service: str, data: st.DataObject, env: dict[str, str]
) -> None:
    options = data.draw(ODD[service], label="options")
    outcome = run([service, "--", *options], env, timeout_s=60)
    assert outcome.status == 2, (options, outcome.status, outcome.stderr)
    assert "Traceback" not in outcome.stderr, (options, outcome.stderr)
    [line] = outcome.stderr.strip().splitlines()
    assert line.startswith(f"coral2-pipeline {service}: "), line

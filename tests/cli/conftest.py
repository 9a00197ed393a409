"""Fixtures of the ``coral2-pipeline status`` tests: a store the command reads, and the
command itself, its output captured."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pipeline.cli import main
from pipeline.store import Store
from tests.cli import walker
from tests.cli.status_helpers import Status

#: The bad-input generator's classes: the test modules that run commands through
#: :func:`tests.cli.walker.run`, by the class of input each feeds them.
CLASSES = {
    "test_every_argument_refuses_bad_input_in_one_line": "files and numbers",
    "test_every_commands_help_on_a_full_disk_is_one_line": "a full stdout",
    "test_every_option_passed_through_to_a_service_is_checked_in_one_line": "pass-through options",
    "test_an_address_or_node_name_option_is_checked_in_one_line": "names and addresses",
    "test_a_path_too_long_in_the_settings_is_one_line": "names and addresses",
}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A test's report carries what the generator ran in it: its class, how many cases,
    how many hung (killed at the walker's bound) and how many printed a traceback."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.when != "call" or not walker.RUNS:
        return
    runs, walker.RUNS[:] = list(walker.RUNS), []
    kind = CLASSES.get(item.module.__name__.rsplit(".", 1)[-1] if item.module else "", "other")
    hangs = sum(1 for r in runs if r.status is None)
    tracebacks = sum(1 for r in runs if "Traceback" in r.stderr)
    report.user_properties.append(("bad-input", (kind, len(runs), hangs, tracebacks)))


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

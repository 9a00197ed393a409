"""A tier of tests against a real system this machine may or may not have (a Flux, the
real DWS): it runs only where that system is found. Where it is not, the tier's tests are
deselected — never counted as passed — and the session says so in one line at its start
and in its summary; with the tier's ``CORAL2_REQUIRE_…=1`` (``make test-flux``, ``make
test-dws-real``) the session fails instead."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest


class Tier:
    """A pytest plugin for one tier: ``find`` returns the line saying what it runs against,
    or raises ``missing`` whose message says what is missing."""

    def __init__(
        self,
        name: str,
        directory: Path,
        find: Callable[[], str],
        missing: type[Exception],
        require: str,
    ) -> None:
        self.name, self.directory, self.find = name, directory, find
        self.missing, self.require = missing, require
        self.found = False
        self.line = ""

    def pytest_configure(self, config: pytest.Config) -> None:
        try:
            self.line, self.found = self.find(), True
        except self.missing as exc:
            self.line = f"{self.name}: not run: " + "; ".join(str(exc).splitlines())
            if os.environ.get(self.require) == "1":
                raise pytest.UsageError(self.line) from None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and not hasattr(session.config, "workerinput"):
            reporter.write_line(self.line)

    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if self.found:
            return
        tier = [item for item in items if self.directory in item.path.parents]
        if tier:
            config.hook.pytest_deselected(items=tier)
            items[:] = [item for item in items if self.directory not in item.path.parents]

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        terminalreporter.write_line(self.line)

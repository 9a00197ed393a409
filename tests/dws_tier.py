"""Whether the real-DWS tier (``tests/dws_real``) runs: only where ``make dws-real`` has
built the real stack (:class:`coral2_sim.dws_real.RealDws`). Where it has not, the tier's
tests are deselected — never counted as passed — and the session says so in one line at
its start and in its summary; with ``CORAL2_REQUIRE_DWS=1`` (``make test-dws-real``) the
session fails instead."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from coral2_sim.dws_real import NotBuilt, RealDws, describe

TIER = Path(__file__).parent / "dws_real"
FOUND = pytest.StashKey[RealDws | None]()
LINE = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    try:
        found: RealDws | None = RealDws.find()
        line = describe(found) if found else ""
    except NotBuilt as exc:
        found = None
        line = f"real-DWS tier: not run: {exc}"
        if os.environ.get("CORAL2_REQUIRE_DWS") == "1":
            raise pytest.UsageError(line) from None
    config.stash[FOUND] = found
    config.stash[LINE] = line


def pytest_sessionstart(session: pytest.Session) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and not hasattr(session.config, "workerinput"):
        reporter.write_line(session.config.stash[LINE])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.stash[FOUND] is not None:
        return
    tier = [item for item in items if TIER in item.path.parents]
    if tier:
        config.hook.pytest_deselected(items=tier)
        items[:] = [item for item in items if TIER not in item.path.parents]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    terminalreporter.write_line(terminalreporter.config.stash[LINE])

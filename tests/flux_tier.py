"""Whether the real-Flux tier (``tests/flux``) runs: only where this machine has the Flux
it needs installed (:func:`pipeline.clients.flux_site.find_flux`). Where it has none, the
tier's tests are deselected — never counted as passed — and the session says so in one
line at its start and in its summary; with ``CORAL2_REQUIRE_FLUX=1`` (``make test-flux``,
``make record-flux``) the session fails instead."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.clients.flux_site import FluxNotFound, FluxSite, find_flux

TIER = Path(__file__).parent / "flux"
FOUND = pytest.StashKey[FluxSite | None]()
LINE = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    try:
        site: FluxSite | None = find_flux()
        line = f"real-Flux tier: runs against {site.describe()}" if site else ""
    except FluxNotFound as exc:
        site = None
        line = "real-Flux tier: not run: " + "; ".join(exc.missing)
        if os.environ.get("CORAL2_REQUIRE_FLUX") == "1":
            raise pytest.UsageError(line) from None
    config.stash[FOUND] = site
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

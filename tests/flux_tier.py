"""Whether the real-Flux tier (``tests/flux``) runs: only where this machine has the Flux
it needs installed (:func:`pipeline.clients.flux_site.find_flux`); ``CORAL2_REQUIRE_FLUX=1``
(``make test-flux``, ``make record-flux``) fails the session where it has none
(:class:`tests.tiers.Tier`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.clients.flux_site import FluxNotFound, find_flux
from tests.tiers import Tier


def pytest_configure(config: pytest.Config) -> None:
    tier = Tier(
        "real-Flux tier",
        Path(__file__).parent / "flux",
        lambda: f"real-Flux tier: runs against {find_flux().describe()}",
        FluxNotFound,
        "CORAL2_REQUIRE_FLUX",
    )
    config.pluginmanager.register(tier, "real-flux-tier")

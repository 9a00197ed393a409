"""Whether the real-DWS tier (``tests/dws_real``) runs: only where ``make dws-real`` has
built the real stack (:class:`coral2_sim.dws_real.RealDws`); ``CORAL2_REQUIRE_DWS=1``
(``make test-dws-real``) fails the session where it has not (:class:`tests.tiers.Tier`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from coral2_sim.dws_real_found import NotBuilt, RealDws, describe

from tests.tiers import Tier


def pytest_configure(config: pytest.Config) -> None:
    tier = Tier(
        "real-DWS tier",
        Path(__file__).parent / "dws_real",
        lambda: describe(RealDws.find()),
        NotBuilt,
        "CORAL2_REQUIRE_DWS",
    )
    config.pluginmanager.register(tier, "real-dws-tier")

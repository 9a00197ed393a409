"""The WLM helpers of the simulator tests come from the package (pipeline/sim/dws/wlm.py)."""

from __future__ import annotations

from pipeline.sim.dws.wlm import advance, fill_servers, wait_state
from pipeline.sim.dws.wlm import workflow_body as workflow

__all__ = ["advance", "fill_servers", "wait_state", "workflow"]

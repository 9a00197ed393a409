"""The WLM helpers of the simulator tests come from the package (coral2_sim/dws/wlm.py)."""

from __future__ import annotations

from coral2_sim.dws.wlm import advance, fill_servers, wait_state
from coral2_sim.dws.wlm import workflow_body as workflow

__all__ = ["advance", "fill_servers", "wait_state", "workflow"]

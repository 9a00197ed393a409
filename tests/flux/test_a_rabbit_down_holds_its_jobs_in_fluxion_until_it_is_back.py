"""On the real Flux with Fluxion, a rabbit that goes Offline has its ssd vertices marked
down in Fluxion (``sched-fluxion-resource.set_status``) and the compute that lost PCIe
drained, so a ``#DW`` job that can only run behind that rabbit waits in SCHED (Fluxion
does not call it unsatisfiable); once the rabbit is Ready again its ssds come up and
the job runs."""

from __future__ import annotations

import json
import time

from coral2_sim.dws.fixtures import set_compute_access, set_rabbit_status

from pipeline.states.rabbits import PCIE_REASON
from tests.flux.conftest import Tier, until

DW = "--setattr=system.dw=#DW jobdw type=xfs capacity=10GiB name=scratch"
#: How long a job shown waiting is watched (s): a slow machine can only lengthen the wait.
WATCH_S = 2.0


def down_ssds(tier: Tier) -> set[str]:
    """Containment paths of the ssd vertices Fluxion has down."""
    graph = json.loads(tier.flux.flux("ion-resource", "find", "-q", "--format=jgf", "status=down"))
    nodes = (graph or {}).get("graph", {}).get("nodes", [])
    return {n["metadata"]["paths"]["containment"] for n in nodes if n["metadata"]["type"] == "ssd"}


def test_the_job_waits_while_its_rabbit_is_down_and_runs_once_back(tier: Tier) -> None:
    dws = tier.system.dws
    assert dws is not None
    set_compute_access(dws, "rabbit2", "compute04", "Offline")
    set_rabbit_status(dws, "rabbit2", "Offline")
    chassis = "/demo/chassis1/"
    assert until(lambda: len({p for p in down_ssds(tier) if p.startswith(chassis)}) == 4)
    drained = tier.flux.flux("resource", "drain", "-no", "{nodelist} {reason}")
    assert f"compute04 {PCIE_REASON}" in drained

    jobid = tier.submit("-N1", DW, "--requires=host:compute03", "true")
    tier.flux.flux("job", "wait-event", "-t", "60", str(jobid), "priority")
    time.sleep(WATCH_S)
    state = tier.flux.flux("jobs", "-no", "{state}", str(jobid)).strip()
    assert state == "SCHED", [(e["name"], e.get("context")) for e in tier.events(jobid)[-4:]]

    set_rabbit_status(dws, "rabbit2", "Ready")
    set_compute_access(dws, "rabbit2", "compute04", "Ready")
    tier.wait_inactive(jobid)
    assert tier.flux.flux("jobs", "-no", "{result}", str(jobid)).strip() == "COMPLETED"
    assert not {p for p in down_ssds(tier) if p.startswith(chassis)}
    tier.flux.flux("resource", "undrain", "compute04")  # coral2_dws never undrains
    assert tier.settled() == []

"""On the real Flux, ``coral2-pipeline flux-bridge`` SIGKILLed while a batch of ``#DW``
jobs runs, and started again: the new bridge reads the events journal again, serves the
jobs' ``dws.post_run`` and delivers their teardown; every job ends once (one
``jobspec-update``, one ``dws_environment``, one ``cray-slingshot``, one ``start`` per
job) and nothing is left.

While the bridge is down no ``dws`` service is registered, and a ``dws.*`` request that
``dws-jobtap.so`` sends in that window fails its job, as with coral2_dws down (dws-jobtap
does not retry): the kill falls where the jobs send none, while they run, held by a gate
the test opens after the restart."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.flux.conftest import Tier

DW = "--setattr=system.dw=#DW jobdw type=xfs capacity=10GiB name=scratch"
ONCE = ("jobspec-update", "dws_environment", "cray-slingshot", "start", "finish")


def test_the_batch_completes_once_after_the_restart(tier: Tier, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    wait = f"while [ ! -e {gate} ]; do sleep 0.05; done"
    jobs = [tier.submit("-N1", DW, "sh", "-c", wait) for _ in range(4)]
    for jobid in jobs:
        tier.flux.flux("job", "wait-event", "-t", "120", str(jobid), "start")
    tier.flux.kill_bridge()
    tier.flux.start_bridge()
    gate.touch()
    for jobid in jobs:
        tier.wait_inactive(jobid)
    for jobid in jobs:
        counts = Counter(tier.names(jobid))
        assert {name: counts[name] for name in ONCE} == dict.fromkeys(ONCE, 1), tier.names(jobid)
        finish = next(e for e in tier.events(jobid) if e["name"] == "finish")
        assert finish["context"]["status"] == 0
        assert "exception" not in counts
    assert tier.settled() == []

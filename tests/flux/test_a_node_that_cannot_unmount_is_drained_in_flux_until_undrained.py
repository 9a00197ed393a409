"""On the real Flux, a compute whose rabbit file system will not unmount (a process of
the job keeps it busy) is drained in Flux's own resource eventlog with flux-coral2's
reason once Flux gives the epilog up (a ``dws-epilog-timeout`` exception: ``dws.abort``);
``flux resource drain`` shows it, the operator's ``flux resource undrain`` returns it,
and the bridge mirrors both from ``resource.journal`` into the pipeline's eventlog."""

from __future__ import annotations

import json
from pathlib import Path

from coral2_sim.node.agent import BUSY

from tests.flux.conftest import Tier, until

DW = "--setattr=system.dw=#DW jobdw type=xfs capacity=10GiB name=scratch"
REASON = "failed to unmount rabbit"


def drained(tier: Tier) -> dict[str, str]:
    out = tier.flux.flux("resource", "drain", "-no", "{nodelist} {reason}")
    found = {}
    for line in out.splitlines():
        hosts, _, reason = line.partition(" ")
        found[hosts] = reason
    return found


def mirrored(tier: Tier, name: str, host: str) -> bool:
    events = tier.store.resource_log.events()
    return any(e["name"] == name and host in json.dumps(e.get("context")) for e in events)


def test_the_node_is_drained_then_returned_by_the_operator(tier: Tier, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    jobid = tier.submit("-N1", DW, "sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done")
    tier.flux.flux("job", "wait-event", "-t", "120", str(jobid), "start")
    host = tier.flux.flux("jobs", "-no", "{nodelist}", str(jobid)).strip()
    [environment] = [e for e in tier.events(jobid) if e["name"] == "dws_environment"]
    mount = environment["context"]["variables"]["DW_JOB_scratch"]
    busy = tier.system.workdir / "mnt" / host / mount.lstrip("/") / BUSY
    busy.touch()
    gate.touch()
    tier.flux.flux("job", "wait-event", "-t", "60", str(jobid), "epilog-start")
    tier.flux.flux("job", "raise", "--type=dws-epilog-timeout", str(jobid), "no unmount")
    assert until(lambda: drained(tier).get(host) == REASON), drained(tier)
    assert until(lambda: mirrored(tier, "drain", host))
    busy.unlink()
    tier.wait_inactive(jobid)

    tier.flux.flux("resource", "undrain", host)
    assert host not in drained(tier)
    assert until(lambda: mirrored(tier, "undrain", host))
    assert tier.settled() == []

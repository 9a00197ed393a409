"""On the real Flux, every job is held in the job-manager prolog (``perilog.so`` running
``coral2-pipeline flux-prolog``) until the pipeline has reserved its VNIs, posted the
``cray-slingshot`` event and every node worker has made the job's CXI services; then it
starts, and flux-coral2's ``cray-slingshot`` shell plugin sets ``SLINGSHOT_VNIS`` from the
event in the job's own environment."""

from __future__ import annotations

import json
import os

from tests.flux.conftest import Tier


def test_the_job_waits_in_the_prolog_for_its_vnis_and_services(tier: Tier) -> None:
    nics = tier.system.workdir / "mnt" / ".state" / "nics"
    script = f'echo "$SLINGSHOT_VNIS"; cat {nics}/$(flux getattr hostname).json; echo'
    jobid = tier.submit("-N2", "sh", "-c", script)
    tier.wait_inactive(jobid)
    names = tier.names(jobid)
    order = [
        "alloc",
        "prolog-start job-manager.prolog",
        "cray-slingshot",
        "prolog-finish job-manager.prolog",
        "start",
    ]
    assert [n for n in names if n in order] == order, names
    [event] = [e for e in tier.events(jobid) if e["name"] == "cray-slingshot"]
    vnis = event["context"]["vnis"]
    assert len(vnis) == 1
    lines = [line for line in tier.output(jobid).splitlines() if line.strip()]
    # each of the two tasks: its SLINGSHOT_VNIS, then its node's NICs as the job saw them
    assert [line for line in lines if not line.startswith("{")] == [str(vnis[0])] * 2
    for line in (line for line in lines if line.startswith("{")):
        devices = json.loads(line)
        assert len(devices) == 4
        for device in devices.values():
            owned = [
                s for s in device["services"] if s["vnis"] == vnis and os.getuid() in s["uids"]
            ]
            assert len(owned) == 1, device
    assert tier.settled() == []

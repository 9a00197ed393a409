"""On the real Flux, a job whose ``#DW`` the pipeline refuses fails with the exception
flux-coral2 raises — ``dws-create`` for a bad directive (the bridge's answer to
``dws.create``, raised by ``dws-jobtap.so``), ``dws`` for storage over the policy maximum
(the ``resource-update`` error) — never starts, and leaves nothing behind."""

from __future__ import annotations

from typing import Any

from tests.flux.conftest import Tier


def fatal(tier: Tier, jobid: int) -> dict[str, Any]:
    [exception] = [
        e["context"]
        for e in tier.events(jobid)
        if e["name"] == "exception" and e["context"]["severity"] == 0
    ]
    return exception


def test_an_invalid_directive_is_refused_at_create_with_dws_words(tier: Tier) -> None:
    jobid = tier.submit(
        "-N1", "--setattr=system.dw=#DW jobdw type=zfs capacity=1GiB name=b", "true"
    )
    tier.wait_inactive(jobid)
    exception = fatal(tier, jobid)
    assert exception["type"] == "dws-create"
    assert exception["note"] == (
        "DWS workflow interactions failed: argument 'type' invalid string 'zfs'"
    )
    assert "start" not in tier.names(jobid)


def test_storage_over_the_policy_maximum_fails_the_job_before_it_runs(tier: Tier) -> None:
    dw = "#DW jobdw type=xfs capacity=4TiB name=huge"
    jobid = tier.submit("-N1", f"--setattr=system.dw={dw}", "true")
    tier.wait_inactive(jobid)
    exception = fatal(tier, jobid)
    assert exception["type"] == "dws"
    assert exception["note"].startswith("DWS workflow interactions failed: 'Requested a total of")
    assert "max is 2048 GiB per node" in exception["note"]
    assert "start" not in tier.names(jobid)
    assert tier.settled() == []

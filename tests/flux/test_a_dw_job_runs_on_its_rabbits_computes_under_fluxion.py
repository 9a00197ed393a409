"""A ``#DW`` job on the real Flux: ``dws-jobtap.so`` sends ``dws.create`` to the bridge, the
pipeline's ``resource-update`` rewrites the jobspec with a rabbit and its ssd, Fluxion
places the job on that rabbit's computes, ``dws.setup`` runs it through the Workflow's
states, ``prolog-remove`` sets ``DW_JOB_*`` in the job's own environment (flux-coral2's
``dws_environment`` shell plugin), ``dws.post_run`` and ``epilog-remove`` end it, and the
job's KVS keeps each state's timing. Nothing is left behind."""

from __future__ import annotations

import json

from tests.flux.conftest import TIER_MAPPING, Tier

DW = "#DW jobdw type=xfs capacity=10GiB name=scratch"


def test_the_job_runs_through_every_hook_in_order(tier: Tier) -> None:
    jobid = tier.submit("-N2", f"--setattr=system.dw={DW}", "printenv")
    tier.wait_inactive(jobid)
    names = tier.names(jobid)
    expected = [
        "dependency-add dws-create",
        "jobspec-update",
        "dependency-remove dws-create",
        "alloc",
        "prolog-start dws-setup",
        "dws_environment",
        "prolog-finish dws-setup",
        "start",
        "finish",
        "epilog-start dws-epilog",
        "epilog-finish dws-epilog",
        "clean",
    ]
    seen = [n for n in names if n in expected]
    assert seen == expected, "\n".join(json.dumps(e) for e in tier.events(jobid)[6:])
    assert seen.index("prolog-finish dws-setup") < seen.index("start"), names
    finish = next(e for e in tier.events(jobid) if e["name"] == "finish")
    assert finish["context"]["status"] == 0, tier.output(jobid)


def test_fluxion_places_the_job_on_the_computes_of_one_rabbit(tier: Tier) -> None:
    jobid = tier.submit("-N2", f"--setattr=system.dw={DW}", "true")
    tier.wait_inactive(jobid)
    update = next(e for e in tier.events(jobid) if e["name"] == "jobspec-update")
    resources = json.dumps(update["context"])
    assert '"ssd"' in resources, update
    nodes = tier.flux.flux("jobs", "-no", "{nodelist}", str(jobid)).strip()
    hosts = tier.flux.flux("hostlist", "-e", "-d", " ", nodes).split()
    rabbits = {TIER_MAPPING.computes[h] for h in hosts}
    assert len(hosts) == 2 and len(rabbits) == 1, (nodes, rabbits)


def test_dw_job_variables_reach_the_jobs_own_environment(tier: Tier) -> None:
    jobid = tier.submit("-N1", f"--setattr=system.dw={DW}", "printenv", "DW_JOB_scratch")
    tier.wait_inactive(jobid)
    assert tier.output(jobid).strip().startswith("/"), tier.names(jobid)


def test_each_workflow_state_leaves_its_timing_in_the_jobs_kvs(tier: Tier) -> None:
    jobid = tier.submit("-N1", f"--setattr=system.dw={DW}", "true")
    tier.wait_inactive(jobid)
    directory = tier.flux.flux("job", "id", "--to=kvs", str(jobid)).strip()
    keys = set(tier.flux.flux("kvs", "ls", "-1", directory).split())
    states = ("proposal", "setup", "datain", "prerun", "postrun", "dataout", "teardown")
    missing = [s for s in states if f"rabbit_{s}_timing" not in keys]
    assert missing == [], sorted(keys)
    assert "rabbit_workflow" in keys
    assert tier.settled() == []

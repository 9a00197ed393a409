"""Proposal complete: one resource-update with the rewritten jobspec, or its errmsg."""

from __future__ import annotations

from pipeline.states.actions import SendOnce, UpdateJob
from pipeline.states.observed import decide
from tests.states.factory import NODE_JOB, job, settings, snapshot, xfs_breakdown


def sent(actions: list, kind: str) -> list[SendOnce]:
    return [a for a in actions if isinstance(a, SendOnce) and a.kind == kind]


def test_the_rewritten_jobspec_is_sent_once_with_no_exclude_when_draining() -> None:
    actions = decide(snapshot("Proposal", breakdowns=(xfs_breakdown(10),)), job(), 0.0, settings())
    (update,) = sent(actions, "resource-update")
    assert update.mark == "resource-update"
    assert update.payload["id"] == 42
    assert update.payload["exclude"] is None
    assert update.payload["resources"][0]["with"][1] == {
        "type": "ssd",
        "count": 10,
        "exclusive": True,
    }
    assert "errmsg" not in update.payload


def test_without_draining_jobs_avoid_bad_rabbits() -> None:
    actions = decide(
        snapshot("Proposal", breakdowns=(xfs_breakdown(10),)),
        job(),
        0.0,
        settings(drain_compute_nodes=False),
    )
    assert sent(actions, "resource-update")[0].payload["exclude"] == {
        "not": [{"properties": ["badrabbit"]}]
    }


def test_a_policy_violation_becomes_a_quoted_errmsg_with_the_original_resources() -> None:
    limits = {"policy": {"maximums": {"xfs": 5}}}
    actions = decide(
        snapshot("Proposal", breakdowns=(xfs_breakdown(10),)), job(), 0.0, settings(**limits)
    )
    payload = sent(actions, "resource-update")[0].payload
    assert (
        payload["errmsg"]
        == "'Requested a total of 10 GiB of xfs storage per node but max is 5 GiB per node'"
    )
    assert payload["resources"] == NODE_JOB


def test_the_workflow_and_proposal_timing_are_saved_to_the_kvs() -> None:
    actions = decide(
        snapshot("Proposal", breakdowns=(xfs_breakdown(10),), elapsed="2.5s"),
        job(),
        0.0,
        settings(),
    )
    keys = {a.payload["key"]: a.payload["value"] for a in sent(actions, "kvs-put")}
    assert keys["rabbit_proposal_timing"] == "2.5s"
    assert keys["rabbit_workflow"]["metadata"]["name"] == "fluxjob-42"


def test_an_already_rewritten_jobspec_sends_nothing() -> None:
    applied = [
        {
            "type": "slot",
            "count": 2,
            "label": "rabbit",
            "with": [{"type": "node", "count": 1}, {"type": "ssd", "count": 10, "exclusive": True}],
        }
    ]
    actions = decide(
        snapshot("Proposal", breakdowns=(xfs_breakdown(10),)),
        job(resources=applied),
        0.0,
        settings(),
    )
    assert sent(actions, "resource-update") == []


def test_breakdowns_not_ready_wait_for_the_next_observation() -> None:
    assert (
        decide(
            snapshot("Proposal", breakdowns=(xfs_breakdown(10, ready=False),)),
            job(),
            0.0,
            settings(),
        )
        == []
    )


def test_an_unoffered_daemon_is_refused_through_errmsg() -> None:
    breakdown = xfs_breakdown(10)
    breakdown["status"]["requires"] = ["user-container-auth"]
    payload = sent(
        decide(snapshot("Proposal", breakdowns=(breakdown,)), job(), 0.0, settings()),
        "resource-update",
    )[0].payload
    assert "user-container-auth" in payload["errmsg"]


def test_a_proposal_not_yet_ready_does_nothing() -> None:
    assert (
        decide(snapshot("Proposal", ready=False, status="DriverWait"), job(), 0.0, settings()) == []
    )


def test_the_breakdowns_storage_is_saved_for_setup_before_flux_hears_of_it() -> None:
    breakdown = xfs_breakdown(10)
    breakdown["status"]["storage"]["reference"] = {"kind": "Servers", "name": "fluxjob-42-0"}
    actions = decide(snapshot("Proposal", breakdowns=(breakdown,)), job(), 0.0, settings())
    saves = [
        i for i, a in enumerate(actions) if isinstance(a, UpdateJob) and "storages" in a.changes
    ]
    update = actions.index(sent(actions, "resource-update")[0])
    assert len(saves) == 1 and saves[0] < update
    [storage] = actions[saves[0]].changes["storages"]
    assert storage["reference"]["name"] == "fluxjob-42-0"
    assert storage["allocationSets"][0]["label"] == "xfs"


def test_the_resource_update_carries_flux_coral2s_fields_and_no_other() -> None:
    actions = decide(snapshot("Proposal", breakdowns=(xfs_breakdown(10),)), job(), 0.0, settings())
    assert set(sent(actions, "resource-update")[0].payload) == {"id", "resources", "exclude"}
    assert {a.payload["id"] for a in sent(actions, "kvs-put")} == {42}


def test_a_daemon_the_site_offers_is_not_refused() -> None:
    breakdown = xfs_breakdown(10)
    breakdown["status"]["requires"] = ["user-container-auth"]
    offered = settings(allowed_daemons=["user-container-auth"])
    payload = sent(decide(snapshot("Proposal", breakdowns=(breakdown,)), job(), 0.0, offered),
                   "resource-update")[0].payload  # fmt: skip
    assert "errmsg" not in payload

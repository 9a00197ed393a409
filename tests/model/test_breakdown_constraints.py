"""The DWS constraints upstream ignores: colocation, labels, placement and required daemons."""

from __future__ import annotations

import pytest

from pipeline.errors import DaemonNotAllowed, PlacementError
from pipeline.model.breakdown import build_allocation_sets, summarize_breakdowns
from tests.model.breakdown_data import GIB, aset, breakdown

MGT = [{"type": "exclusive", "key": "lustre-mgt"}]
RABBIT = {"dataworkflowservices.github.io/storage": "Rabbit"}


def test_sets_with_the_same_colocation_key_never_share_a_rabbit() -> None:
    sets = [
        aset("mgt", "AllocateSingleServer", GIB, colocation=MGT),
        aset("mdt", "AllocateAcrossServers", GIB, count=1, colocation=MGT),
    ]
    result = build_allocation_sets(sets, {"r1": 4, "r2": 2}, 6)
    assert [s["storage"][0]["name"] for s in result] == ["r1", "r2"]


def test_colocation_that_cannot_be_met_is_an_error() -> None:
    sets = [aset("mdt", "AllocateAcrossServers", GIB, count=3, colocation=MGT)]
    with pytest.raises(
        PlacementError, match="needs 3 allocations with colocation key 'lustre-mgt'"
    ):
        build_allocation_sets(sets, {"r1": 4, "r2": 2}, 6)


def test_sets_without_colocation_may_share_a_rabbit() -> None:
    sets = [
        aset("ost", "AllocateAcrossServers", GIB, count=1),
        aset("mdt", "AllocateAcrossServers", GIB, count=1),
    ]
    result = build_allocation_sets(sets, {"r1": 4, "r2": 2}, 6)
    assert [s["storage"][0]["name"] for s in result] == ["r1", "r1"]


def test_only_rabbits_carrying_every_label_take_count_allocations() -> None:
    sets = [
        aset(
            "ost",
            "AllocateAcrossServers",
            GIB,
            count=2,
            labels=["dataworkflowservices.github.io/storage=Rabbit", "site/pool=fast"],
        )
    ]
    labels = {"r1": RABBIT, "r2": {**RABBIT, "site/pool": "fast"}}
    result = build_allocation_sets(sets, {"r1": 4, "r2": 2}, 6, storage_labels=labels)
    assert result[0]["storage"] == [{"allocationCount": 2, "name": "r2"}]


def test_across_servers_without_count_uses_only_labelled_rabbits_and_still_covers_capacity() -> (
    None
):
    sets = [aset("ost", "AllocateAcrossServers", 30 * GIB, labels=["site/pool=fast"])]
    labels = {"r1": {}, "r2": {"site/pool": "fast"}}
    result = build_allocation_sets(sets, {"r1": 4, "r2": 2}, 6, storage_labels=labels)
    entry = result[0]
    assert [s["name"] for s in entry["storage"]] == ["r2"]
    assert entry["allocationSize"] * sum(s["allocationCount"] for s in entry["storage"]) >= 30 * GIB


def test_per_compute_storage_on_a_rabbit_without_the_labels_is_refused() -> None:
    sets = [aset("xfs", "AllocatePerCompute", GIB)]
    with pytest.raises(PlacementError, match="rabbit r1"):
        build_allocation_sets(sets, {"r1": 1}, 1, storage_labels={"r1": {}})


def test_labels_are_not_checked_when_storage_labels_are_unknown() -> None:
    sets = [aset("xfs", "AllocatePerCompute", GIB, labels=["site/pool=fast"])]
    assert build_allocation_sets(sets, {"r1": 1}, 1)[0]["storage"] == [
        {"allocationCount": 1, "name": "r1"}
    ]


def location(*access: tuple[str, str]) -> dict:
    return {
        "constraints": {"location": [{"access": [{"type": t, "priority": p} for t, p in access]}]}
    }


@pytest.mark.parametrize(
    ("computes", "placement"),
    [
        ([location(("physical", "mandatory"))], "physical"),
        ([location(("network", "mandatory"), ("physical", "bestEffort"))], "preferred"),
        ([location(("network", "mandatory"))], "any"),
        ([location(("network", "mandatory")), location(("physical", "mandatory"))], "physical"),
    ],
)
def test_compute_location_constraints_decide_placement(
    computes: list[dict], placement: str
) -> None:
    bds = [breakdown(compute=c) for c in computes]
    assert summarize_breakdowns(bds).placement == placement


def test_required_daemons_are_recorded_once_in_order() -> None:
    bds = [breakdown(requires=["copy-offload"]), breakdown(requiredDaemons=["copy-offload", "dm"])]
    summary = summarize_breakdowns(bds, allowed_daemons=["copy-offload", "dm"])
    assert summary.required_daemons == ("copy-offload", "dm")


def test_a_daemon_the_site_does_not_offer_is_named() -> None:
    with pytest.raises(DaemonNotAllowed, match="'user-container-auth'"):
        summarize_breakdowns([breakdown(requires=["user-container-auth"])])

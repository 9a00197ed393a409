"""Servers allocation sets are built as flux-coral2 builds them."""

from __future__ import annotations

import pytest

from pipeline.errors import PlacementError
from pipeline.model.breakdown import build_allocation_sets, check_is_lustre
from tests.model.breakdown_data import GIB, aset

FOUR_GIB = 4 * GIB


def test_per_compute_sets_get_one_allocation_per_compute_behind_each_rabbit() -> None:
    result = build_allocation_sets(
        [aset("xfs", "AllocatePerCompute", 10 * GIB)], {"r1": 3, "r2": 1}, 4
    )
    assert result == [
        {
            "allocationSize": 10 * GIB,
            "label": "xfs",
            "storage": [{"allocationCount": 3, "name": "r1"}, {"allocationCount": 1, "name": "r2"}],
        }
    ]


def test_across_servers_without_count_uses_the_gcd_of_node_counts() -> None:
    result = build_allocation_sets(
        [aset("ost", "AllocateAcrossServers", 100 * GIB)], {"r1": 4, "r2": 2}, 6
    )
    # g = 2; size = ceil(2 * 100 GiB / 6); counts 2 and 1
    assert result[0]["allocationSize"] == -(-2 * 100 * GIB // 6)
    assert result[0]["storage"] == [
        {"allocationCount": 2, "name": "r1"},
        {"allocationCount": 1, "name": "r2"},
    ]


def test_a_count_constraint_spreads_allocations_over_the_biggest_rabbits_first() -> None:
    result = build_allocation_sets(
        [aset("ost", "AllocateAcrossServers", 40 * GIB, count=5)], {"r1": 1, "r2": 3, "r3": 2}, 6
    )
    assert result[0]["allocationSize"] == 8 * GIB
    # passes over r2, r3, r1 (descending node count), wrapping around
    assert result[0]["storage"] == [
        {"allocationCount": 2, "name": "r2"},
        {"allocationCount": 2, "name": "r3"},
        {"allocationCount": 1, "name": "r1"},
    ]


def test_ties_in_node_count_keep_first_seen_order() -> None:
    result = build_allocation_sets(
        [aset("mdt", "AllocateAcrossServers", 8 * GIB, count=1)], {"r1": 2, "r2": 2}, 4
    )
    assert result[0]["storage"] == [{"allocationCount": 1, "name": "r1"}]


def test_single_server_sets_get_exactly_one_allocation() -> None:
    result = build_allocation_sets(
        [aset("mgt", "AllocateSingleServer", GIB)], {"r1": 1, "r2": 5}, 6
    )
    assert result[0]["storage"] == [{"allocationCount": 1, "name": "r2"}]


def test_sizes_never_go_below_the_minimum_allocation() -> None:
    result = build_allocation_sets([aset("mgt", "AllocateSingleServer", 1)], {"r1": 1}, 1)
    assert result[0]["allocationSize"] == FOUR_GIB
    result = build_allocation_sets(
        [aset("mgt", "AllocateSingleServer", 1)], {"r1": 1}, 1, min_alloc_gib=1
    )
    assert result[0]["allocationSize"] == GIB


def test_an_empty_rabbit_map_is_an_error_not_an_endless_loop() -> None:
    with pytest.raises(PlacementError, match="none of the job's nodes is behind a rabbit"):
        build_allocation_sets([aset("ost", "AllocateAcrossServers", GIB, count=2)], {}, 0)


def test_lustre_is_recognised_by_its_target_labels() -> None:
    assert check_is_lustre([aset("ost", "AllocateAcrossServers", 1)])
    assert not check_is_lustre([aset("xfs", "AllocatePerCompute", 1)])

"""Properties of the breakdown arithmetic, checked with Hypothesis."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipeline.model.breakdown import apply_breakdowns, build_allocation_sets
from pipeline.model.jobspec import parse_resources
from tests.model.breakdown_data import GIB, aset, breakdown, node_job

rabbit_maps = st.dictionaries(
    st.sampled_from([f"rabbit{i}" for i in range(12)]),
    st.integers(min_value=1, max_value=16),
    min_size=1,
)
capacities = st.integers(min_value=1, max_value=64 * 2**40)
strategies = st.sampled_from(
    [
        ("xfs", "AllocatePerCompute"),
        ("ost", "AllocateAcrossServers"),
        ("mgt", "AllocateSingleServer"),
    ]
)


@given(
    rabbit_maps,
    capacities,
    strategies,
    st.one_of(st.none(), st.integers(min_value=1, max_value=40)),
)
def test_allocation_count_is_exact_and_capacity_is_covered(
    nodes: dict[str, int], capacity: int, kind: tuple[str, str], count: int | None
) -> None:
    label, strategy = kind
    constraints = {"count": count} if count is not None and label == "ost" else {}
    result = build_allocation_sets(
        [aset(label, strategy, capacity, **constraints)], nodes, sum(nodes.values())
    )
    entry = result[0]
    total = sum(s["allocationCount"] for s in entry["storage"])
    if strategy == "AllocatePerCompute":
        assert total == sum(nodes.values())
        assert entry["allocationSize"] >= capacity
    elif strategy == "AllocateSingleServer":
        assert total == 1
    elif "count" in constraints:
        assert total == count
    else:
        assert [s["name"] for s in entry["storage"]] == list(nodes)
    if strategy != "AllocatePerCompute":
        assert entry["allocationSize"] * total >= capacity
    assert entry["allocationSize"] >= 4 * GIB


@given(
    st.integers(min_value=1, max_value=512),
    st.lists(st.tuples(strategies, capacities), min_size=1, max_size=4),
)
def test_rewritten_resources_are_valid_jobspec(nodecount: int, sets: list) -> None:
    bds = [breakdown(aset(label, strategy, cap)) for (label, strategy), cap in sets]
    result = apply_breakdowns(bds, node_job(nodecount))
    assert result is not None
    parsed = parse_resources(result)
    assert parsed[0].count == nodecount
    assert apply_breakdowns(bds, result) is None

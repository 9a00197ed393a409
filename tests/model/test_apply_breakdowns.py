"""apply_breakdowns rewrites jobspec resources exactly as flux-coral2 does."""

from __future__ import annotations

import copy

import pytest

from pipeline.errors import BreakdownError, BreakdownNotReady, UnknownAllocationLabel
from pipeline.model.breakdown import apply_breakdowns
from tests.model.breakdown_data import GIB, aset, breakdown, lustre, node_job, xfs


def test_a_node_job_becomes_a_rabbit_slot_with_ssd_per_node() -> None:
    assert apply_breakdowns([xfs(10)], node_job(4)) == [
        {
            "type": "slot",
            "count": 4,
            "label": "rabbit",
            "with": [
                {**node_job(1)[0], "count": 1},
                {"type": "ssd", "count": 10, "exclusive": True},
            ],
        }
    ]


def test_sizes_round_up_to_whole_gib_with_a_minimum() -> None:
    padded = breakdown(aset("xfs", "AllocatePerCompute", 11051991040))
    assert apply_breakdowns([padded], node_job(1))[0]["with"][1]["count"] == 11
    assert apply_breakdowns([xfs(1)], node_job(1))[0]["with"][1]["count"] == 4
    assert apply_breakdowns([xfs(1)], node_job(1), min_size_gib=1)[0]["with"][1]["count"] == 1


def test_lustre_targets_are_spread_over_the_nodes() -> None:
    result = apply_breakdowns([lustre(10 * 2**40)], node_job(4))
    # ost 10240 GiB / 4 nodes = 2560; mgtmdt 5 GiB / 4 rounds up to 2
    assert result[0]["with"][1]["count"] == 2562


def test_several_breakdowns_add_up() -> None:
    assert apply_breakdowns([xfs(10), xfs(20)], node_job(2))[0]["with"][1]["count"] == 30


def test_a_chassis_job_gets_ssd_per_chassis_appended() -> None:
    chassis = [
        {
            "type": "chassis",
            "count": 2,
            "with": [{"type": "node", "count": 3, "with": [{"type": "core", "count": 1}]}],
        }
    ]
    result = apply_breakdowns([xfs(10)], chassis)
    assert result == [
        {
            **chassis[0],
            "with": [chassis[0]["with"][0], {"type": "ssd", "count": 30, "exclusive": True}],
        }
    ]


def test_no_storage_leaves_resources_unchanged() -> None:
    persistentdw = breakdown(compute={"constraints": {"location": []}})
    assert apply_breakdowns([persistentdw], node_job(3)) == node_job(3)


def test_already_applied_resources_give_none() -> None:
    once = apply_breakdowns([xfs(10)], node_job(2))
    assert once is not None
    assert apply_breakdowns([xfs(10)], once) is None


def test_input_resources_are_not_modified() -> None:
    resources = node_job(2)
    before = copy.deepcopy(resources)
    apply_breakdowns([xfs(10)], resources)
    assert resources == before


@pytest.mark.parametrize(
    ("breakdowns", "resources", "message"),
    [
        ([xfs(1)], [], "jobspec resources empty"),
        (
            [xfs(1)],
            node_job(1) + node_job(1),
            "must have a single top-level 'node' or 'chassis' entry, got 2 entries",
        ),
        (
            [xfs(1)],
            [{"type": "core", "count": 1}],
            "must have a single top-level 'node' or 'chassis' entry, got 'core'",
        ),
        (
            [xfs(1)],
            [
                {
                    "type": "slot",
                    "count": 1,
                    "label": "x",
                    "with": [{"type": "node", "count": 1}, {"type": "core", "count": 1}],
                }
            ],
            "jobspec resources has top level 'slot' entry with core below it",
        ),
        (
            [xfs(1)],
            [{"type": "chassis", "count": 1, "with": [{"type": "core", "count": 1}]}],
            "Expected 'node' type below 'chassis, got core",
        ),
        ([{**xfs(1), "kind": "Servers"}], node_job(1), "unsupported breakdown kind 'Servers'"),
        (
            [breakdown(aset("xfs", "AllocateAcrossServers", GIB))],
            node_job(1),
            "xfs allocationStrategy must be 'AllocatePerCompute' but got 'AllocateAcrossServers'",
        ),
        (
            [breakdown(aset("mgt", "AllocateAcrossServers", GIB))],
            node_job(1),
            "mgt allocationStrategy must be 'AllocateSingleServer' but got 'AllocateAcrossServers'",
        ),
    ],
)
def test_bad_inputs_get_flux_coral2s_messages(
    breakdowns: list, resources: list, message: str
) -> None:
    with pytest.raises(BreakdownError) as info:
        apply_breakdowns(breakdowns, resources)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


def test_an_unknown_label_is_named() -> None:
    with pytest.raises(UnknownAllocationLabel, match="'nvme'"):
        apply_breakdowns([breakdown(aset("nvme", "AllocatePerCompute", GIB))], node_job(1))


def test_a_breakdown_not_ready_is_a_temporary_error() -> None:
    with pytest.raises(BreakdownNotReady, match="Breakdown marked as not ready"):
        apply_breakdowns([xfs(1) | {"status": {**xfs(1)["status"], "ready": False}}], node_job(1))

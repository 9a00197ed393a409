"""What setup takes of a DirectiveBreakdown: its Servers reference and allocation sets, or a
clear refusal when DWS left them out."""

from __future__ import annotations

import pytest

from pipeline.errors import BreakdownError
from pipeline.model.breakdown import servers_of, storages_of
from tests.model.breakdown_data import GIB, aset

REFERENCE = {"kind": "Servers", "name": "fluxjob-7-0", "namespace": "default"}


def test_each_breakdown_with_storage_gives_its_reference_and_sets_in_order() -> None:
    breakdowns = [
        {
            "status": {
                "storage": {
                    "reference": REFERENCE,
                    "allocationSets": [aset("xfs", "AllocatePerCompute", GIB)],
                }
            }
        },
        {"status": {}},  # no storage (a persistent instance's destroy): no Servers
        {"status": {"storage": {"reference": {"name": "fluxjob-7-2"}, "allocationSets": []}}},
    ]
    storages = storages_of(breakdowns)
    assert [s["reference"]["name"] for s in storages] == ["fluxjob-7-0", "fluxjob-7-2"]
    reference, sets = servers_of(storages[0], {"r1": 2}, 2)
    assert reference == REFERENCE
    assert sets[0]["label"] == "xfs"


def test_a_storage_without_a_servers_reference_is_refused_with_what_to_check() -> None:
    [storage] = storages_of([{"status": {"storage": {"allocationSets": []}}}])
    with pytest.raises(BreakdownError, match="names no Servers object"):
        servers_of(storage, {"r1": 1}, 1)

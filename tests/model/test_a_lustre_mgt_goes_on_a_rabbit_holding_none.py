"""A Lustre file system's MGT goes on a rabbit of the job that holds no other file
system's MGT (nnf-sos gives a rabbit's LNet address one MGT and fails the Setup of a
second); a job whose every rabbit holds one is refused in words, before any Servers is
written; the OSTs are placed as before."""

from __future__ import annotations

import pytest

from pipeline.errors import PlacementError
from pipeline.model.breakdown import build_allocation_sets
from tests.model.breakdown_data import GIB, lustre

SETS = lustre(100 * GIB)["status"]["storage"]["allocationSets"]


def placed(sets: list[dict[str, object]], label: str) -> list[object]:
    [aset] = [s for s in sets if s["label"] == label]
    return [entry["name"] for entry in aset["storage"]]  # type: ignore[attr-defined]


def test_the_mgt_goes_on_the_rabbit_with_most_computes_when_none_holds_one() -> None:
    sets = build_allocation_sets(SETS, {"rabbit1": 3, "rabbit2": 1}, 4, mgts={})
    assert placed(sets, "mgtmdt") == ["rabbit1"]


def test_the_mgt_goes_on_another_rabbit_of_the_job_when_the_first_holds_one() -> None:
    busy = {"rabbit1": "fluxjob-7-0"}
    sets = build_allocation_sets(SETS, {"rabbit1": 3, "rabbit2": 1}, 4, mgts=busy)
    assert placed(sets, "mgtmdt") == ["rabbit2"]
    assert placed(sets, "ost") == placed(
        build_allocation_sets(SETS, {"rabbit1": 3, "rabbit2": 1}, 4), "ost"
    )


def test_a_job_whose_every_rabbit_holds_an_mgt_is_refused_naming_them() -> None:
    with pytest.raises(PlacementError) as refused:
        build_allocation_sets(SETS, {"rabbit1": 2}, 2, mgts={"rabbit1": "fluxjob-7-0"})
    assert "rabbit1 (for fluxjob-7-0)" in str(refused.value)
    assert "multiple MGTs found" in str(refused.value)

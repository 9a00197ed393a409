"""Where a rabbit's Storage and the rabbitmapping disagree: a compute the Storage lists
that the mapping puts elsewhere (or nowhere), and a compute the mapping puts behind the
rabbit that the Storage does not list; nothing when they agree, or when the Storage lists
no compute yet."""

from __future__ import annotations

from typing import Any

from pipeline.states.rabbits import mapping_drift

MAPPED = {"c1": "rabbit1", "c2": "rabbit1", "c3": "rabbit2"}


def storage(*computes: str) -> dict[str, Any]:
    return {"status": {"access": {"computes": [{"name": c, "status": "Ready"} for c in computes]}}}


def test_agreement_is_no_drift() -> None:
    assert mapping_drift("rabbit1", storage("c1", "c2"), MAPPED) == {}


def test_a_recabled_an_unknown_and_a_missing_compute_are_each_named() -> None:
    assert mapping_drift("rabbit1", storage("c1", "c3", "c9"), MAPPED) == {
        "c3": "rabbit2",
        "c9": "",
        "c2": "-",
    }


def test_a_storage_listing_no_compute_yet_is_not_compared() -> None:
    assert mapping_drift("rabbit1", {"status": {}}, MAPPED) == {}

"""The rabbitmapping is validated and answers lookups both ways."""

from __future__ import annotations

import pytest

from pipeline.errors import RabbitMappingError
from pipeline.model.rabbitmap import RabbitMapping

GOOD = {
    "computes": {"c1": "r1", "c2": "r1", "c3": "r2"},
    "rabbits": {
        "r1": {"capacity": 100, "hostlist": "c[1-2]"},
        "r2": {"capacity": 100, "hostlist": "c3"},
    },
}


def test_lookups_work_both_ways() -> None:
    mapping = RabbitMapping.parse(GOOD)
    assert mapping.rabbit_of("c3") == "r2"
    assert mapping.computes_of("r1") == ["c1", "c2"]
    assert mapping.rabbits_of(["c1", "c3"]) == "r[1-2]"
    assert mapping.computes_of_rabbits(["r2", "r1"]) == "c[1-3]"
    assert mapping.nodes_per_rabbit(["c3", "c1", "c2", "r1"]) == {"r2": 1, "r1": 2}


def test_a_compute_under_two_rabbits_names_both() -> None:
    bad = {**GOOD, "rabbits": {**GOOD["rabbits"], "r2": {"capacity": 1, "hostlist": "c[2-3]"}}}
    with pytest.raises(RabbitMappingError, match="'c2' is listed under two rabbits: 'r1' and 'r2'"):
        RabbitMapping.parse(bad)


def test_computes_must_agree_with_hostlists() -> None:
    bad = {**GOOD, "computes": {**GOOD["computes"], "c3": "r1"}}
    with pytest.raises(
        RabbitMappingError, match="'c3' maps to rabbit 'r1' but is listed under rabbit 'r2'"
    ):
        RabbitMapping.parse(bad)


def test_unknown_names_use_getrabbits_messages() -> None:
    mapping = RabbitMapping.parse(GOOD)
    with pytest.raises(RabbitMappingError, match="Could not find compute c9"):
        mapping.rabbit_of("c9")
    with pytest.raises(RabbitMappingError, match="Could not find rabbit r9"):
        mapping.computes_of("r9")


def test_negative_capacity_and_wrong_types_are_rejected() -> None:
    with pytest.raises(RabbitMappingError, match="capacity"):
        RabbitMapping.parse(
            {**GOOD, "rabbits": {**GOOD["rabbits"], "r2": {"capacity": -1, "hostlist": "c3"}}}
        )
    with pytest.raises(RabbitMappingError, match="capacity"):
        RabbitMapping.parse(
            {**GOOD, "rabbits": {**GOOD["rabbits"], "r2": {"capacity": "big", "hostlist": "c3"}}}
        )

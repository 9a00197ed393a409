"""Jobspec resources are validated as RFC 14/25 shapes."""

from __future__ import annotations

import pytest

from pipeline.errors import JobspecError
from pipeline.model.jobspec import count_nodes, parse_resources

NODE_JOB = [
    {
        "type": "node",
        "count": 4,
        "with": [
            {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 2}]}
        ],
    }
]


def test_a_node_slot_core_request_is_accepted() -> None:
    parsed = parse_resources(NODE_JOB)
    assert parsed[0].to_json_obj() == NODE_JOB[0]


def test_nodes_are_counted_through_slots_and_chassis() -> None:
    chassis = [
        {
            "type": "chassis",
            "count": 2,
            "with": [{"type": "node", "count": 3, "with": [{"type": "core", "count": 1}]}],
        }
    ]
    assert count_nodes(parse_resources(NODE_JOB)) == 4
    assert count_nodes(parse_resources(chassis)) == 6


def test_a_slot_needs_a_label() -> None:
    with pytest.raises(JobspecError, match="needs a 'label'"):
        parse_resources([{"type": "slot", "count": 1, "with": [{"type": "node", "count": 1}]}])


def test_counts_must_be_positive_integers() -> None:
    with pytest.raises(JobspecError, match=r"\[0\].count"):
        parse_resources([{"type": "node", "count": 0}])
    with pytest.raises(JobspecError, match="count"):
        parse_resources([{"type": "node", "count": "2"}])


def test_unknown_types_and_keys_are_named() -> None:
    with pytest.raises(JobspecError, match="type"):
        parse_resources([{"type": "socket", "count": 1}])
    with pytest.raises(JobspecError, match="colour"):
        parse_resources([{"type": "node", "count": 1, "colour": "red"}])


def test_empty_resources_are_rejected_with_flux_coral2s_text() -> None:
    with pytest.raises(JobspecError, match="jobspec resources empty"):
        parse_resources([])

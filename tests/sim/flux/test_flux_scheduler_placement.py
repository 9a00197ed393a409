"""The simulated scheduler honours ssd capacity, constraints and drains."""

from __future__ import annotations

import pytest
from coral2_sim.demo.model import sample_path
from coral2_sim.flux.sched import Request, Resources, Unsatisfiable, matches, request_of

from pipeline.model.rabbitmap import RabbitMapping

MAPPING = RabbitMapping.load(sample_path("sample-rabbitmapping.json"))


def test_a_rewritten_jobspec_asks_for_nodes_and_ssd_under_one_rabbit_per_slot() -> None:
    resources = [
        {
            "type": "slot",
            "count": 2,
            "label": "rabbit",
            "with": [{"type": "node", "count": 3}, {"type": "ssd", "count": 100}],
        }
    ]
    assert request_of(resources) == Request(nodes=3, groups=2, ssd_gib=100)


def test_ssd_beyond_a_rabbits_free_capacity_waits() -> None:
    res = Resources(MAPPING)
    capacity = min(res.ssd_free.values())
    per_rabbit = Request(nodes=1, groups=len(MAPPING.rabbits), ssd_gib=capacity)
    hosts, ssd = res.allocate(per_rabbit, None) or ([], {})
    assert len({MAPPING.computes[h] for h in hosts}) == len(MAPPING.rabbits)
    assert res.allocate(Request(nodes=1, groups=1, ssd_gib=1), None) is None
    res.release(hosts, ssd)
    assert res.allocate(Request(nodes=1, groups=1, ssd_gib=1), None) is not None


def test_the_exclude_constraint_keeps_jobs_off_badrabbit_nodes() -> None:
    res = Resources(MAPPING)
    computes = list(MAPPING.computes)
    for host in computes[:-1]:
        res.properties[host].add("badrabbit")
    exclude = {"not": [{"properties": ["badrabbit"]}]}
    assert res.allocate(Request(nodes=1), exclude) == ([computes[-1]], {})
    assert res.allocate(Request(nodes=1), exclude) is None


def test_drained_nodes_are_never_allocated() -> None:
    res = Resources(MAPPING)
    for host in list(MAPPING.computes)[1:]:
        res.drained[host] = "failed to unmount rabbit"
    assert res.allocate(Request(nodes=2), None) is None


def test_a_request_no_instance_could_meet_is_unsatisfiable() -> None:
    with pytest.raises(Unsatisfiable, match="asks for 65 nodes"):
        Resources(MAPPING).check(Request(nodes=65))


def test_rfc31_operators_combine() -> None:
    constraint = {"or": [{"hostlist": ["compute[01-02]"]}, {"not": [{"ranks": ["0-62"]}]}]}
    assert matches(constraint, "compute02", 1, set())
    assert matches(constraint, "compute64", 63, set())
    assert not matches(constraint, "compute05", 4, set())

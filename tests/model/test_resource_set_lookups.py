"""R answers rank → host, host → cores/GPUs, unique hosts and properties."""

from __future__ import annotations

import pytest

from pipeline.errors import ResourceSetError
from pipeline.model.resource_set import ResourceSet

R = {
    "version": 1,
    "execution": {
        "R_lite": [
            {"rank": "0-1", "children": {"core": "0-3", "gpu": "0-1"}},
            {"rank": "2", "children": {"core": "0-1"}},
        ],
        "nodelist": ["b[2,1]", "a0"],
        "properties": {"pdebug": "0,2", "rabbit": "2"},
        "starttime": 0,
        "expiration": 0,
    },
}


def test_rank_i_is_the_ith_host_of_the_nodelist_in_written_order() -> None:
    rset = ResourceSet.parse(R)
    assert [rset.hostname(r) for r in rset.ranks] == ["b2", "b1", "a0"]


def test_a_host_has_the_cores_and_gpus_of_its_rank() -> None:
    rset = ResourceSet.parse(R)
    assert rset.cores("b1") == (0, 1, 2, 3)
    assert rset.gpus("b1") == (0, 1)
    assert rset.gpus("a0") == ()


def test_properties_of_a_host_come_from_its_rank() -> None:
    rset = ResourceSet.parse(R)
    assert rset.properties_of("a0") == ["pdebug", "rabbit"]
    assert rset.properties_of("b1") == []


def test_unique_hosts_keep_rank_order() -> None:
    assert ResourceSet.parse(R).unique_hosts() == ["b2", "b1", "a0"]


def test_unknown_ranks_and_hosts_are_errors() -> None:
    rset = ResourceSet.parse(R)
    with pytest.raises(ResourceSetError, match="rank 7"):
        rset.hostname(7)
    with pytest.raises(ResourceSetError, match="'zz'"):
        rset.cores("zz")

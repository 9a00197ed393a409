"""R is validated as RFC 20 requires, naming what is wrong."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pipeline.errors import ResourceSetError
from pipeline.model.resource_set import ResourceSet
from tests.conftest import make_r


def with_change(path: list[str], value: Any) -> dict[str, Any]:
    r = copy.deepcopy(make_r("node[0-3]", "0-7"))
    target = r
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return r


def test_a_well_formed_r_is_accepted() -> None:
    assert ResourceSet.parse(make_r("node[0-3]", "0-7")).ranks == [0, 1, 2, 3]


def test_version_must_be_one() -> None:
    with pytest.raises(ResourceSetError, match="version must be 1"):
        ResourceSet.parse(with_change(["version"], 2))


def test_nodelist_must_cover_every_rank() -> None:
    with pytest.raises(ResourceSetError, match="nodelist has 2 hosts but R_lite names 4 ranks"):
        ResourceSet.parse(with_change(["execution", "nodelist"], ["node[0-1]"]))


@pytest.mark.parametrize("char", list("!&'\"^`|()"))
def test_property_names_must_not_contain_illegal_characters(char: str) -> None:
    with pytest.raises(ResourceSetError, match="invalid property name"):
        ResourceSet.parse(with_change(["execution", "properties"], {f"bad{char}": "0"}))


def test_expiration_must_follow_starttime_when_both_are_set() -> None:
    r = with_change(["execution", "starttime"], 100.0)
    r["execution"]["expiration"] = 50.0
    with pytest.raises(ResourceSetError, match="expiration"):
        ResourceSet.parse(r)


def test_unset_times_are_zero_and_accepted() -> None:
    r = with_change(["execution", "starttime"], 100.0)
    assert ResourceSet.parse(r).execution.expiration == 0.0


def test_a_bad_rank_idset_is_named() -> None:
    with pytest.raises(ResourceSetError, match="'0-x'"):
        ResourceSet.parse(
            with_change(["execution", "R_lite"], [{"rank": "0-x", "children": {"core": "0"}}])
        )


def test_a_rank_in_two_entries_is_rejected() -> None:
    lite = [{"rank": "0-1", "children": {"core": "0"}}, {"rank": "1", "children": {"core": "1"}}]
    with pytest.raises(ResourceSetError, match="rank 1 appears in more than one entry"):
        ResourceSet.parse(with_change(["execution", "R_lite"], lite))


def test_properties_must_name_known_ranks() -> None:
    with pytest.raises(ResourceSetError, match="ranks 9"):
        ResourceSet.parse(with_change(["execution", "properties"], {"pbatch": "9"}))

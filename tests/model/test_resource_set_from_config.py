"""R is built from a Flux [resource] config table as `flux R parse-config` does."""

from __future__ import annotations

import pytest

from pipeline.errors import ResourceSetError
from pipeline.model.resource_set import r_from_config, resource_set_from_config


def test_a_single_entry_gives_the_parse_config_r() -> None:
    assert r_from_config([{"hosts": "compute-01", "cores": "0-4"}]) == {
        "version": 1,
        "execution": {
            "R_lite": [{"rank": "0", "children": {"core": "0-4"}}],
            "starttime": 0.0,
            "expiration": 0.0,
            "nodelist": ["compute-01"],
        },
    }


def test_ranks_follow_first_appearance_and_identical_children_share_an_entry() -> None:
    rset = resource_set_from_config(
        [
            {"hosts": "c[1-2]", "cores": "0-3", "gpus": "0"},
            {"hosts": "r1", "cores": "0-1", "properties": ["rabbit"]},
            {"hosts": "c3", "cores": "0-3", "gpus": "0"},
        ]
    )
    assert rset.hosts == ["c1", "c2", "r1", "c3"]
    assert [(e.rank, e.children) for e in rset.execution.R_lite] == [
        ("0-1,3", {"core": "0-3", "gpu": "0"}),
        ("2", {"core": "0-1"}),
    ]
    assert rset.execution.properties == {"rabbit": "2"}


def test_later_entries_add_to_a_host() -> None:
    rset = resource_set_from_config(
        [{"hosts": "c1", "cores": "0-1"}, {"hosts": "c1", "gpus": "0", "properties": ["x"]}]
    )
    assert rset.children("c1") == {"core": (0, 1), "gpu": (0,)}
    assert rset.properties_of("c1") == ["x"]


def test_unknown_keys_and_bad_idsets_are_named() -> None:
    with pytest.raises(ResourceSetError, match="colour"):
        resource_set_from_config([{"hosts": "c1", "cores": "0", "colour": "red"}])
    with pytest.raises(ResourceSetError, match="'0-'"):
        resource_set_from_config([{"hosts": "c1", "cores": "0-"}])


def test_a_host_without_cores_is_rejected() -> None:
    with pytest.raises(ResourceSetError, match="no cores"):
        resource_set_from_config([{"hosts": "c1"}])


def test_an_empty_config_says_how_to_fix_it() -> None:
    with pytest.raises(ResourceSetError, match=r"\[\[resource.config\]\]"):
        resource_set_from_config([])

"""dws2jgf builds the same graph as flux dws2jgf."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipeline.errors import ResourceSetError
from pipeline.model.jgf import default_cluster_name, dws2jgf
from pipeline.model.rabbitmap import RabbitMapping
from tests.conftest import DATA, make_r


@pytest.fixture
def mapping() -> RabbitMapping:
    return RabbitMapping.load(DATA / "rabbits.json")


def nodes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["scheduling"]["graph"]["nodes"]


def test_one_compute_gives_77_vertices_in_upstream_order(mapping: RabbitMapping) -> None:
    doc = dws2jgf(make_r("compute-01"), mapping, cluster_name="ElCapitan", validate=False)
    vertices = nodes(doc)
    assert len(vertices) == 77
    assert len(doc["scheduling"]["graph"]["edges"]) == 76
    assert vertices[0] == {
        "id": "0",
        "metadata": {
            "type": "cluster",
            "name": "ElCapitan",
            "paths": {"containment": "/ElCapitan"},
        },
    }
    assert vertices[1]["metadata"] == {
        "type": "chassis",
        "id": 0,
        "properties": {"rabbit": "kind-worker2", "ssdcount": "36"},
        "paths": {"containment": "/ElCapitan/chassis0"},
    }
    assert vertices[2]["metadata"] == {
        "type": "ssd",
        "unit": "GiB",
        "size": 1024,
        "paths": {"containment": "/ElCapitan/chassis0/ssd0"},
        "status": 1,
    }
    assert vertices[38]["metadata"] == {
        "type": "node",
        "name": "compute-01",
        "rank": 0,
        "paths": {"containment": "/ElCapitan/chassis0/compute-01"},
    }
    assert vertices[39]["metadata"] == {
        "type": "core",
        "id": 0,
        "rank": 0,
        "paths": {"containment": "/ElCapitan/chassis0/compute-01/core0"},
    }
    assert vertices[40]["metadata"]["properties"]["rabbit"] == "kind-worker3"
    assert doc["execution"] == make_r("compute-01")["execution"]


def test_every_edge_links_a_parent_to_the_next_vertex(mapping: RabbitMapping) -> None:
    doc = dws2jgf(make_r("compute-[01-04]", "0-4"), mapping, cluster_name="ElCapitan")
    edges = doc["scheduling"]["graph"]["edges"]
    assert edges[0] == {"source": "0", "target": "1"}
    assert edges[1] == {"source": "1", "target": "2"}
    assert [e["target"] for e in edges] == [str(i) for i in range(1, 99)]


def test_four_computes_are_placed_under_their_chassis(mapping: RabbitMapping) -> None:
    vertices = nodes(dws2jgf(make_r("compute-[01-04]", "0-4"), mapping, cluster_name="ElCapitan"))
    assert len(vertices) == 99
    named = {
        v["metadata"].get("name"): int(v["id"]) for v in vertices if v["metadata"]["type"] == "node"
    }
    assert named == {"compute-01": 38, "compute-02": 44, "compute-03": 50, "compute-04": 93}
    assert vertices[56]["metadata"]["type"] == "chassis"
    assert vertices[93]["metadata"]["rank"] == 3


def test_hosts_without_a_rabbit_hang_off_the_cluster(mapping: RabbitMapping) -> None:
    r = make_r("compute-[01-04],nodws[0-5]", "0-4")
    vertices = nodes(dws2jgf(r, mapping, cluster_name="compute"))
    assert len(vertices) == 135
    nodws = [
        (int(v["id"]), v["metadata"]["rank"], v["metadata"]["paths"]["containment"])
        for v in vertices
        if v["metadata"].get("name", "").startswith("nodws")
    ]
    assert nodws[0] == (99, 4, "/compute/nodws0")
    assert [n[0] for n in nodws] == [99, 105, 111, 117, 123, 129]


def test_properties_become_node_metadata_and_r_is_kept_as_given(mapping: RabbitMapping) -> None:
    r = {
        "version": 1,
        "execution": {
            "R_lite": [{"rank": "0", "children": {"core": "0-9"}}],
            "starttime": 0,
            "expiration": 0,
            "nodelist": ["compute-01"],
            "properties": {"pdebug": "0"},
        },
    }
    doc = dws2jgf(r, mapping, cluster_name="ElCapitan", validate=False)
    vertices = nodes(doc)
    assert len(vertices) == 86
    assert vertices[38]["metadata"]["properties"] == {"pdebug": ""}
    assert vertices[49]["metadata"]["type"] == "chassis"
    assert doc["execution"]["starttime"] == 0
    assert isinstance(doc["execution"]["starttime"], int)


def test_a_rabbit_in_r_becomes_an_exclusive_storage_node(mapping: RabbitMapping) -> None:
    r = make_r("compute-[01-04],kind-worker2", "0-1")
    vertices = nodes(dws2jgf(r, mapping, cluster_name="c"))
    storage = [v["metadata"] for v in vertices if v["metadata"]["type"] == "storage_node"]
    assert storage == [
        {
            "type": "storage_node",
            "name": "kind-worker2",
            "rank": 4,
            "exclusive": True,
            "paths": {"containment": "/c/chassis0/kind-worker2"},
        }
    ]


@pytest.mark.parametrize("exclude", ["1", "compute-02"])
def test_excluded_hosts_are_left_out_by_rank_or_by_name(
    mapping: RabbitMapping, exclude: str
) -> None:
    vertices = nodes(
        dws2jgf(make_r("compute-[01-04]", "0"), mapping, cluster_name="c", exclude=exclude)
    )
    names = [v["metadata"]["name"] for v in vertices if v["metadata"]["type"] == "node"]
    assert names == ["compute-01", "compute-03", "compute-04"]


def test_only_sched_gives_just_the_graph(mapping: RabbitMapping) -> None:
    doc = dws2jgf(make_r("compute-[01-04]"), mapping, cluster_name="c", only_sched=True)
    assert set(doc) == {"graph"}
    assert doc["graph"]["directed"] is False


def test_computes_missing_from_r_are_refused_unless_not_validating(mapping: RabbitMapping) -> None:
    with pytest.raises(ResourceSetError, match="found in rabbit_mapping but not R from stdin"):
        dws2jgf(make_r("compute-01"), mapping, cluster_name="c")


def test_the_default_cluster_name_is_the_hostname_without_digits() -> None:
    assert default_cluster_name("compute-01") == "compute"
    assert default_cluster_name("elcap1234") == "elcap"


def test_output_bytes_match_json_dump_formatting(mapping: RabbitMapping, tmp_path: Path) -> None:
    from pipeline.model.jgf import Dws2Jgf

    r = make_r("compute-[01-04]", "0-2")
    text = "".join(Dws2Jgf(r, mapping, cluster_name="c").chunks_of_text())
    assert text == json.dumps(json.loads(text))

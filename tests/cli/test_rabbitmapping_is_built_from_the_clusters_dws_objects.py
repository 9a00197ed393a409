"""``coral2-pipeline rabbitmapping`` builds the mapping from the SystemConfiguration, the
Storages and the Servers of the API server, as ``flux rabbitmapping`` does: capacity from
each Storage, external allocations subtracted, and a compute under two rabbits or a
Storage claiming another rabbit's compute is one clear error."""

from __future__ import annotations

import json

import pytest
from coral2_sim.dws.fixtures import install_cluster
from coral2_sim.kube.api import KubeApiServer

from pipeline.cli import main
from pipeline.clients.k8s import DwsClient
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.model.rabbitmap_build import build_mapping

GiB, TiB = 2**30, 2**40
MAPPING = RabbitMapping.build({"r1": (4 * TiB, ["c1", "c2"]), "r2": (2 * TiB, ["c3"])})


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch, dws: DwsClient, server: KubeApiServer) -> DwsClient:
    install_cluster(dws, MAPPING)
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__API_HOST", server.url)
    return dws


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["rabbitmapping", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_mapping_matches_the_cluster(
    cluster: DwsClient, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys)
    assert code == 0
    assert json.loads(out) == json.loads(MAPPING.model_dump_json())
    assert out == json.dumps(json.loads(out), sort_keys=True) + "\n"  # compact, sorted


def test_servers_not_made_by_flux_hold_capacity(
    cluster: DwsClient, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("other-job", "fluxjob-5"):
        storage = [{"name": "r1", "allocationCount": 2}]
        aset = {"label": "xfs", "allocationSize": 100 * GiB, "storage": storage}
        cluster.create("servers", {"metadata": {"name": name}, "spec": {"allocationSets": [aset]}})
    _, out, _ = run(capsys, "--indent", "1")
    assert json.loads(out)["rabbits"]["r1"]["capacity"] == 4 * TiB - 200 * GiB
    _, out, _ = run(capsys, "--ignore-external-allocations")
    assert json.loads(out)["rabbits"]["r1"]["capacity"] == 4 * TiB


def test_a_compute_under_two_rabbits_is_an_error(
    cluster: DwsClient, capsys: pytest.CaptureFixture[str]
) -> None:
    config = cluster.get("systemconfigurations", "default")
    nodes = config["spec"]["storageNodes"]
    nodes[1]["computesAccess"].append({"name": "c1", "index": 1})
    cluster.patch("systemconfigurations", "default", {"spec": {"storageNodes": nodes}})
    code, out, err = run(capsys)
    assert (code, out) == (1, "")
    assert "Same hostname (c1) cannot be associated with both r1 and r2" in err
    assert "Traceback" not in err


def test_a_storage_claiming_another_rabbits_compute_is_a_mismatch() -> None:
    config = {
        "spec": {
            "storageNodes": [{"name": "r1", "computesAccess": [{"name": "c1"}]}, {"name": "r2"}]
        }
    }
    storage = {
        "metadata": {"name": "r2"},
        "status": {"capacity": 1, "access": {"computes": [{"name": "c1"}]}},
    }
    with pytest.raises(
        ValueError,
        match="Mismatch: rabbit r2 claims to be connected to c1 but systemconfiguration gives r1",
    ):
        build_mapping(config, [storage])


def test_a_rabbit_without_capacity_gets_the_largest_seen() -> None:
    config = {
        "spec": {
            "storageNodes": [
                {"name": "r1", "computesAccess": [{"name": "c1"}]},
                {"name": "r2", "computesAccess": [{"name": "c2"}]},
            ]
        }
    }
    storages = [
        {
            "metadata": {"name": "r1"},
            "status": {"capacity": 7, "access": {"computes": [{"name": "c1"}]}},
        },
        {"metadata": {"name": "r2"}, "status": {"access": {"computes": [{"name": "c2"}]}}},
    ]
    assert {r: e["capacity"] for r, e in build_mapping(config, storages)["rabbits"].items()} == {
        "r1": 7,
        "r2": 7,
    }

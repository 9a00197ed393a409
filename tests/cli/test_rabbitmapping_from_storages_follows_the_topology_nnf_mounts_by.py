"""``coral2-pipeline rabbitmapping --from-storages`` rebuilds the mapping from what each
rabbit's Storage lists (the topology nnf hands allocations out by) where the
SystemConfiguration disagrees, with one warning line per compute; without the option the
disagreement stays the error ``flux rabbitmapping`` gives."""

from __future__ import annotations

import json

import pytest
from coral2_sim.dws.fixtures import install_cluster, move_compute
from coral2_sim.kube.api import KubeApiServer

from pipeline.cli import main
from pipeline.clients.k8s import DwsClient
from pipeline.model.rabbitmap import RabbitMapping

TiB = 2**40
MAPPING = RabbitMapping.build({"r1": (4 * TiB, ["c1", "c2"]), "r2": (2 * TiB, ["c3"])})


@pytest.fixture
def recabled(monkeypatch: pytest.MonkeyPatch, dws: DwsClient, server: KubeApiServer) -> DwsClient:
    """A cluster whose SystemConfiguration still puts c2 behind r1, where r2's Storage
    lists it."""
    install_cluster(dws, MAPPING)
    move_compute(dws, "c2", "r2")
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__API_HOST", server.url)
    return dws


def test_the_storages_place_each_compute_with_a_warning_for_each_moved_one(
    recabled: DwsClient, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rabbitmapping", "--from-storages"]) == 0
    out, err = capsys.readouterr()
    mapping = json.loads(out)
    assert mapping["computes"] == {"c1": "r1", "c2": "r2", "c3": "r2"}
    assert mapping["rabbits"]["r2"]["hostlist"] == "c[2-3]"
    assert err.splitlines() == [
        "coral2-pipeline rabbitmapping: warning: compute c2: SystemConfiguration puts it "
        "behind r1, r2's Storage lists it; using the Storages"
    ]


def test_without_the_option_the_disagreement_is_an_error(
    recabled: DwsClient, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rabbitmapping"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    mismatch = "Mismatch: rabbit r2 claims to be connected to c2 but systemconfiguration gives r1"
    assert mismatch in err

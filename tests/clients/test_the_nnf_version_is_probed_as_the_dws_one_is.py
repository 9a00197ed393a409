"""The NNF version the pipeline reads data movements in is probed as the DWS one is: the
newest one the API server serves, so a site on an older nnf-sos is read in its own
version; one serving none of them is one clear refusal."""

from __future__ import annotations

import pytest
from coral2_sim.kube.api import KubeApiServer
from coral2_sim.kube.discovery import VERSIONS
from coral2_sim.kube.resources import NNF
from kubernetes import client

from pipeline.clients.k8s import DwsClient
from pipeline.errors import ApiVersionNotFound


def client_of(server: KubeApiServer) -> DwsClient:
    return DwsClient(client.ApiClient(client.Configuration(host=server.url)), outage_budget_s=1)


def test_the_newest_served_version_is_spoken() -> None:
    with KubeApiServer() as server:
        dws = client_of(server)
        assert dws.datamovements("fluxjob-1", 10) == []
        assert dws.nnf_version == "v1alpha11"


def test_a_site_serving_an_older_version_is_read_in_it() -> None:
    with KubeApiServer(versions={**VERSIONS, NNF: ("v1alpha9",)}) as server:
        dws = client_of(server)
        assert dws.datamovements("fluxjob-1", 10) == []
        assert dws.nnf_version == "v1alpha9"


def test_a_site_serving_none_is_one_clear_refusal() -> None:
    with (
        KubeApiServer(versions={**VERSIONS, NNF: ("v1alpha3",)}) as server,
        pytest.raises(
            ApiVersionNotFound, match=r"could not find suitable API version for nnf.cray.hpe.com"
        ),
    ):
        client_of(server).datamovements("fluxjob-1", 10)

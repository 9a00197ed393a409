"""The simulated API server, or a real cluster when ``CORAL2_TEST_KUBECONFIG`` names one."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from kubernetes import client, config

from pipeline.clients.k8s import DwsClient
from pipeline.sim.kube_api import KubeApiServer
from pipeline.sim.kube_local import local_api_client


@pytest.fixture(scope="session")
def kube_server() -> Iterator[KubeApiServer | None]:
    if os.environ.get("CORAL2_TEST_KUBECONFIG"):
        yield None
        return
    with KubeApiServer() as server:
        yield server


@pytest.fixture(scope="session", params=["http", "in-process"])
def api_client(
    request: pytest.FixtureRequest, kube_server: KubeApiServer | None
) -> Iterator[client.ApiClient]:
    """Every test here runs over HTTP and again through the in-process client that the
    simulated DWS controller uses (``pipeline.sim.kube_local``): both must answer alike."""
    kubeconfig = os.environ.get("CORAL2_TEST_KUBECONFIG")
    if kubeconfig:
        if request.param == "in-process":
            pytest.skip("the in-process client exists only for the simulated API server")
        api = config.new_client_from_config(config_file=kubeconfig)
    else:
        assert kube_server is not None
        if request.param == "in-process":
            api = local_api_client(kube_server)
        else:
            api = client.ApiClient(client.Configuration(host=kube_server.url))
    yield api
    api.close()


@pytest.fixture
def custom(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


@pytest.fixture
def simulated(kube_server: KubeApiServer | None) -> KubeApiServer:
    """The simulator itself, for tests of its test hooks (skipped on a real cluster)."""
    if kube_server is None:
        pytest.skip("fault injection exists only in the simulated API server")
    return kube_server


@pytest.fixture
def server() -> Iterator[KubeApiServer]:
    """A simulated API server of the test's own (nothing left by other tests)."""
    with KubeApiServer() as srv:
        yield srv


@pytest.fixture
def dws(server: KubeApiServer) -> Iterator[DwsClient]:
    """Our DWS client on :func:`server`, giving up on an outage after 2 s."""
    api = client.ApiClient(client.Configuration(host=server.url))
    yield DwsClient(api, outage_budget_s=2.0)
    api.close()

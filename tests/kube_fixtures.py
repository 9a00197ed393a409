"""Fixtures: the simulated API server, or a real cluster when ``CORAL2_TEST_KUBECONFIG`` names one.

Imported by the conftest of the client tests and of the API server tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from coral2_sim.kube.api import KubeApiServer
from coral2_sim.kube.local import DirectCustomObjects, local_api_client
from kubernetes import client, config

from pipeline.clients.k8s import DwsClient


@pytest.fixture(scope="session")
def kube_server() -> Iterator[KubeApiServer | None]:
    if os.environ.get("CORAL2_TEST_KUBECONFIG"):
        yield None
        return
    with KubeApiServer() as server:
        yield server


@pytest.fixture(scope="session", params=["http", "in-process", "direct"])
def transport(request: pytest.FixtureRequest) -> str:
    """How the tests here reach the server: every one runs over HTTP, again through the
    in-process client that the simulated DWS controller uses (``coral2_sim.kube.local``),
    and again through its direct calls: all three must answer alike."""
    if os.environ.get("CORAL2_TEST_KUBECONFIG") and request.param != "http":
        pytest.skip("the in-process clients exist only for the simulated API server")
    return str(request.param)


@pytest.fixture(scope="session")
def api_client(transport: str, kube_server: KubeApiServer | None) -> Iterator[client.ApiClient]:
    kubeconfig = os.environ.get("CORAL2_TEST_KUBECONFIG")
    if kubeconfig:
        api = config.new_client_from_config(config_file=kubeconfig)
    else:
        assert kube_server is not None
        if transport == "http":
            api = client.ApiClient(client.Configuration(host=kube_server.url))
        else:
            api = local_api_client(kube_server)
    yield api
    api.close()


@pytest.fixture
def custom(transport: str, api_client: client.ApiClient) -> client.CustomObjectsApi:
    if transport == "direct":
        return DirectCustomObjects(api_client)
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

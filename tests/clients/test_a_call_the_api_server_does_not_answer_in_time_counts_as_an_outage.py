"""An API call that gets no answer within the request timeout counts as the API server
being unreachable — retried within the outage budget, then Unavailable — so no worker
thread waits on a silent connection for ever (the threads pool enforces no time limit)."""

from __future__ import annotations

import pytest
from coral2_sim.kube.api import KubeApiServer
from kubernetes import client

from pipeline.clients.k8s import DwsClient
from pipeline.errors import Unavailable


def test_a_silent_server_makes_the_call_unavailable(server: KubeApiServer) -> None:
    api = client.ApiClient(client.Configuration(host=server.url))
    dws = DwsClient(api, outage_budget_s=0.5, request_timeout_s=0.2)
    server.inject(delay_s=5.0, method="GET", times=20)  # far longer than the timeout
    with pytest.raises(Unavailable, match="unreachable"):
        dws.get_workflow("fluxjob-1")
    api.close()


def test_an_answer_that_comes_in_time_is_taken(server: KubeApiServer) -> None:
    api = client.ApiClient(client.Configuration(host=server.url))
    dws = DwsClient(api, outage_budget_s=0.5, request_timeout_s=5.0)
    server.inject(delay_s=0.2, method="POST")
    created = dws.create_workflow({"metadata": {"name": "fluxjob-2"}, "spec": {}})
    assert created["metadata"]["name"] == "fluxjob-2"
    api.close()

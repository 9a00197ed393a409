"""The simulated API server applies the DWS CRDs' schema to every field the pipeline
writes, before any webhook, with kube-apiserver's words: an enum value outside the
CRD's (``Unsupported value``) and a value of the wrong type (``must be of type``) are
refused 422, and the object is left as it was."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from coral2_sim.dws import admission as dws_admission
from coral2_sim.kube.api import KubeApiServer
from kubernetes import client

from pipeline.clients.k8s import DwsClient
from pipeline.errors import Invalid
from pipeline.model.workflow import workflow_body


@pytest.fixture
def dws() -> Iterator[DwsClient]:
    with KubeApiServer() as server:
        dws_admission.install(server.store)
        api = client.ApiClient(client.Configuration(host=server.url))
        yield DwsClient(api, outage_budget_s=1)
        api.close()


def refused(call: Any) -> str:
    with pytest.raises(Invalid) as caught:
        call()
    assert caught.value.status == 422
    return str(caught.value)


def test_a_desired_state_outside_the_enum_is_unsupported(dws: DwsClient) -> None:
    body = workflow_body(1, 1001, 1001, ["#DW jobdw type=xfs capacity=1GiB name=x"])
    body["spec"]["desiredState"] = "Running"
    message = refused(lambda: dws.create_workflow(body))
    assert message == (
        'Workflow.dataworkflowservices.github.io "fluxjob-1" is invalid: spec.desiredState: '
        'Unsupported value: "Running": supported values: "Proposal", "Setup", "DataIn", '
        '"PreRun", "PostRun", "DataOut", "Teardown"'
    )


def test_a_user_id_of_the_wrong_type_is_refused(dws: DwsClient) -> None:
    body = workflow_body(2, 1001, 1001, ["#DW jobdw type=xfs capacity=1GiB name=x"])
    body["spec"]["userID"] = "1001"
    assert refused(lambda: dws.create_workflow(body)).endswith(
        'spec.userID: Invalid value: "string": spec.userID in body must be of type integer: '
        '"string"'
    )


def test_a_servers_allocation_size_must_be_an_integer(dws: DwsClient) -> None:
    dws.create("servers", {"metadata": {"name": "s"}, "spec": {}})
    sets = [{"label": "xfs", "allocationSize": "10GiB", "storage": [{"name": "rabbit1"}]}]
    message = refused(lambda: dws.patch("servers", "s", {"spec": {"allocationSets": sets}}))
    assert "spec.allocationSets[0].allocationSize in body must be of type integer" in message
    assert dws.get("servers", "s")["spec"] == {}


def test_a_system_status_node_is_enabled_or_disabled(dws: DwsClient) -> None:
    dws.create("systemstatuses", {"metadata": {"name": "default"}, "data": {"nodes": {}}})
    nodes = {"compute01": "Disabled", "compute02": "Off"}
    message = refused(lambda: dws.patch("systemstatuses", "default", {"data": {"nodes": nodes}}))
    assert message.endswith(
        'data.nodes.compute02: Unsupported value: "Off": supported values: "Enabled", "Disabled"'
    )


def test_every_problem_is_listed_at_once(dws: DwsClient) -> None:
    dws.create("storages", {"metadata": {"name": "rabbit1"}, "spec": {"state": "Enabled"}})
    body = {"spec": {"state": "Broken"}}
    assert "spec.state: Unsupported value" in refused(
        lambda: dws.patch("storages", "rabbit1", body)
    )
    computes = {"data": [{"name": 5}, {"name": "compute02"}, {"name": True}]}
    dws.create("computes", {"metadata": {"name": "c"}, "data": []})
    message = refused(lambda: dws.patch("computes", "c", computes))
    assert ": [data[0].name: Invalid value" in message and "data[2].name: Invalid value" in message

"""The DWS client against the simulated API server: typed calls, guards, retries."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import pytest
from coral2_sim.kube.api import KubeApiServer
from coral2_sim.kube.store import KubeStore
from kubernetes import client

from pipeline.clients.k8s import WLM_FINALIZER, DwsClient
from pipeline.errors import AlreadyExists, ApiVersionNotFound, Conflict, Gone, Unavailable

G = "dataworkflowservices.github.io"


def workflow(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/v1alpha7",
        "kind": "Workflow",
        "metadata": {"name": name, "finalizers": [WLM_FINALIZER]},
        "spec": {
            "desiredState": "Proposal",
            "dwDirectives": [],
            "jobID": "f1",
            "userID": 1,
            "groupID": 1,
            "wlmID": "flux",
        },
    }


def set_state(dws: DwsClient, name: str, state: str, ready: bool = True) -> None:
    dws.patch("workflows", name, {"status": {"state": state, "ready": ready}})


def test_creating_twice_raises_already_exists(dws: DwsClient) -> None:
    dws.create_workflow(workflow("fluxjob-1"))
    with pytest.raises(AlreadyExists):
        dws.create_workflow(workflow("fluxjob-1"))


def test_desired_state_moves_only_from_the_expected_state(dws: DwsClient) -> None:
    dws.create_workflow(workflow("fluxjob-2"))
    set_state(dws, "fluxjob-2", "Proposal")
    with pytest.raises(Conflict, match="not 'Setup'"):
        dws.patch_desired_state("fluxjob-2", "DataIn", expected_state="Setup")
    moved = dws.patch_desired_state("fluxjob-2", "Setup", expected_state="Proposal")
    assert moved["spec"]["desiredState"] == "Setup"
    again = dws.patch_desired_state("fluxjob-2", "Setup", expected_state="Proposal")
    assert again["metadata"]["resourceVersion"] == moved["metadata"]["resourceVersion"]


def test_our_finalizer_is_removed_once_and_deletion_completes(dws: DwsClient) -> None:
    dws.create_workflow(workflow("fluxjob-3"))
    assert dws.delete_workflow("fluxjob-3") is True
    assert dws.remove_finalizer("fluxjob-3") is True
    assert dws.delete_workflow("fluxjob-3") is False


def test_breakdowns_are_fetched_in_the_order_the_workflow_lists_them(dws: DwsClient) -> None:
    for name in ("fluxjob-4-1", "fluxjob-4-0"):
        dws.custom.create_namespaced_custom_object(
            G,
            "v1alpha7",
            "default",
            "directivebreakdowns",
            {"metadata": {"name": name}, "spec": {}},
        )
    refs = [
        {"name": "fluxjob-4-0", "namespace": "default"},
        {"name": "fluxjob-4-1", "namespace": "default"},
    ]
    found = dws.directive_breakdowns({"status": {"directiveBreakdowns": refs}})
    assert [b["metadata"]["name"] for b in found] == ["fluxjob-4-0", "fluxjob-4-1"]


def test_the_workflow_token_is_read_from_its_secret(dws: DwsClient) -> None:
    token = base64.b64encode(b"s3cret").decode()
    dws.core.create_namespaced_secret(
        "default",
        client.V1Secret(metadata=client.V1ObjectMeta(name="wf-token"), data={"token": token}),
    )
    wf = {
        "metadata": {"name": "wf", "namespace": "default"},
        "status": {"workflowToken": {"secretName": "wf-token", "secretNamespace": "default"}},
    }
    assert dws.workflow_token(wf) == "s3cret"
    assert dws.workflow_token({"status": {}}) is None


def test_short_outages_are_retried_with_backoff(server: KubeApiServer, dws: DwsClient) -> None:
    dws.create_workflow(workflow("fluxjob-5"))
    server.inject(code=503, method="GET", times=3)
    assert dws.get_workflow("fluxjob-5")["metadata"]["name"] == "fluxjob-5"


def test_a_long_outage_gives_up_within_the_budget(server: KubeApiServer, dws: DwsClient) -> None:
    server.inject(code=503, method="GET", times=1000)
    with pytest.raises(Unavailable):
        dws.get_workflow("fluxjob-6")
    tries = 1000 - len(server.routes.faults)
    # the backoff (0.05 s, doubling) fits at most 6 tries in the 2-s budget: fewer when
    # the machine is slow, never more
    assert 1 <= tries <= 6


def test_watch_yields_changes_and_raises_gone_when_too_old() -> None:
    with KubeApiServer(store=KubeStore(event_log_size=2)) as server:
        api = client.ApiClient(client.Configuration(host=server.url))
        dws = DwsClient(api)
        dws.create_workflow(workflow("fluxjob-first"))
        _, rv = dws.list_objects("workflows")
        name = f"fluxjob-{uuid.uuid4().int % 1000}"
        dws.create_workflow(workflow(name))
        events = list(dws.watch("workflows", rv, timeout_s=1))
        assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", name)]
        for i in range(4):
            dws.create_workflow(workflow(f"fluxjob-x{i}"))
        with pytest.raises(Gone):
            list(dws.watch("workflows", rv, timeout_s=1))
        api.close()


def test_version_probing_picks_a_served_version_or_says_which_were_tried(dws: DwsClient) -> None:
    assert dws.probe_version() == "v1alpha7"
    assert dws.probe_version("v1alpha6") == "v1alpha6"


def test_version_probing_speaks_the_version_the_server_serves() -> None:
    with KubeApiServer(versions={G: ("v1alpha6",)}) as server:
        older = DwsClient(client.ApiClient(client.Configuration(host=server.url)))
        assert older.probe_version() == "v1alpha6"
        assert older.version == "v1alpha6"


def test_a_server_serving_no_version_we_speak_is_one_clear_refusal() -> None:
    with KubeApiServer(versions={G: ("v1alpha3",)}) as server:
        ancient = DwsClient(client.ApiClient(client.Configuration(host=server.url)))
        with pytest.raises(
            ApiVersionNotFound,
            match=r"could not find suitable API version for dataworkflowservices.github.io "
            r"\(out of \['v1alpha7', 'v1alpha6'\]\): the API server serves none of them",
        ):
            ancient.probe_version()


def test_an_unreachable_server_is_an_outage_not_a_missing_version() -> None:
    unreachable = DwsClient(
        client.ApiClient(client.Configuration(host="http://127.0.0.1:1")), outage_budget_s=0.2
    )
    with pytest.raises(Unavailable):
        unreachable.probe_version()

"""The simulated API server restarts as a real one over its etcd does: the objects stay,
every connection and watch is cut, requests in the meantime are refused (in-process
clients' too), and a watch resumed from before the restart gets 410 Expired, so a client
must list again."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest
from coral2_sim.kube.api import KubeApiServer
from coral2_sim.kube.local import local_dws_client
from coral2_sim.kube.sim_paths import RESTART_PATH
from kubernetes import client, watch

from pipeline.clients.k8s import DwsClient
from pipeline.errors import TemporaryError

PLURAL = {"group": "dataworkflowservices.github.io", "version": "v1alpha7", "plural": "workflows"}


def workflow(name: str) -> dict[str, object]:
    return {
        "apiVersion": "dataworkflowservices.github.io/v1alpha7",
        "kind": "Workflow",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "desiredState": "Proposal", "wlmID": "flux", "jobID": 1, "userID": 1001,
            "groupID": 1001, "dwDirectives": [],
        },
    }  # fmt: skip


@pytest.fixture
def server() -> Iterator[KubeApiServer]:
    with KubeApiServer() as srv:
        yield srv


def restart_over_http(server: KubeApiServer, down_s: float) -> None:
    request = urllib.request.Request(
        server.url + RESTART_PATH, data=json.dumps({"down_s": down_s}).encode(), method="PUT"
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 202


def until(check: object, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_objects_survive_and_a_watch_from_before_gets_410(server: KubeApiServer) -> None:
    api = client.ApiClient(client.Configuration(host=server.url))
    custom = client.CustomObjectsApi(api)
    created = custom.create_namespaced_custom_object(
        namespace="default", body=workflow("fluxjob-1"), **PLURAL
    )
    before = created["metadata"]["resourceVersion"]
    custom.create_namespaced_custom_object(
        namespace="default", body=workflow("fluxjob-3"), **PLURAL
    )  # a change after ``before``: a watch from it has something to replay
    ended = threading.Event()
    replayed: list[str] = []

    def follow() -> None:
        stream = watch.Watch().stream(
            custom.list_namespaced_custom_object, namespace="default",
            resource_version=before, timeout_seconds=60, **PLURAL,
        )  # fmt: skip
        try:
            for event in stream:
                replayed.append(event["object"]["metadata"]["name"])
        except Exception:  # the connection was cut
            pass
        ended.set()

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    until(lambda: replayed == ["fluxjob-3"])  # before the restart, the same watch replays
    restart_over_http(server, down_s=0.5)
    until(ended.is_set)
    until(lambda: server.restarts == 1)
    got = custom.get_namespaced_custom_object(namespace="default", name="fluxjob-1", **PLURAL)
    assert got["metadata"]["resourceVersion"] == before
    with pytest.raises(client.ApiException) as gone:
        for _ in watch.Watch().stream(
            custom.list_namespaced_custom_object, namespace="default",
            resource_version=before, timeout_seconds=5, **PLURAL,
        ):  # fmt: skip
            pass
    assert gone.value.status == 410
    api.close()


def test_requests_during_the_restart_are_refused_in_process_too(server: KubeApiServer) -> None:
    local: DwsClient = local_dws_client(server, outage_budget_s=0.1)
    local.create_workflow(workflow("fluxjob-2"))
    restarting = threading.Thread(target=server.restart, args=(2.0,))
    restarting.start()
    until(lambda: server.routes.down)
    with pytest.raises(TemporaryError):
        local.get_workflow("fluxjob-2")
    restarting.join()
    assert local.get_workflow("fluxjob-2")["metadata"]["name"] == "fluxjob-2"

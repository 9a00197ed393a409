"""The simulated API server behaves as the official client expects (runnable on a real cluster)."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

G, V, NS = "dataworkflowservices.github.io", "v1alpha7", "default"


def workflow(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/{V}",
        "kind": "Workflow",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "desiredState": "Proposal",
            "dwDirectives": [],
            "jobID": "f1",
            "userID": 1,
            "groupID": 1,
            "wlmID": "flux",
        },
    }


def unique() -> str:
    return f"fluxjob-{uuid.uuid4().int % 10**12}"


def test_create_answers_201_with_server_set_metadata(custom: client.CustomObjectsApi) -> None:
    name = unique()
    created = custom.create_namespaced_custom_object(G, V, NS, "workflows", workflow(name))
    meta = created["metadata"]
    assert meta["name"] == name
    assert meta["uid"]
    assert meta["creationTimestamp"]
    assert meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0


def test_creating_twice_is_409_already_exists(custom: client.CustomObjectsApi) -> None:
    name = unique()
    custom.create_namespaced_custom_object(G, V, NS, "workflows", workflow(name))
    with pytest.raises(ApiException) as info:
        custom.create_namespaced_custom_object(G, V, NS, "workflows", workflow(name))
    assert info.value.status == 409
    assert "AlreadyExists" in info.value.body


def test_getting_a_missing_object_is_404(custom: client.CustomObjectsApi) -> None:
    with pytest.raises(ApiException) as info:
        custom.get_namespaced_custom_object(G, V, NS, "workflows", "fluxjob-nope")
    assert info.value.status == 404


def test_merge_patch_changes_fields_deletes_nulls_and_bumps_generation(
    custom: client.CustomObjectsApi,
) -> None:
    name = unique()
    custom.create_namespaced_custom_object(G, V, NS, "workflows", workflow(name))
    patched = custom.patch_namespaced_custom_object(
        G, V, NS, "workflows", name, {"spec": {"desiredState": "Setup", "wlmID": None}}
    )
    assert patched["spec"]["desiredState"] == "Setup"
    assert "wlmID" not in patched["spec"]
    assert patched["metadata"]["generation"] == 2


def test_a_no_op_patch_keeps_the_resource_version(custom: client.CustomObjectsApi) -> None:
    name = unique()
    created = custom.create_namespaced_custom_object(G, V, NS, "workflows", workflow(name))
    same = custom.patch_namespaced_custom_object(
        G, V, NS, "workflows", name, {"spec": {"desiredState": "Proposal"}}
    )
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_a_stale_resource_version_is_409_conflict(custom: client.CustomObjectsApi) -> None:
    name = unique()
    created = custom.create_namespaced_custom_object(G, V, NS, "workflows", workflow(name))
    custom.patch_namespaced_custom_object(
        G, V, NS, "workflows", name, {"spec": {"desiredState": "Setup"}}
    )
    stale = {
        "metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
        "spec": {"desiredState": "DataIn"},
    }
    with pytest.raises(ApiException) as info:
        custom.patch_namespaced_custom_object(G, V, NS, "workflows", name, stale)
    assert info.value.status == 409


def test_status_subresource_is_separate_where_the_type_has_one(
    custom: client.CustomObjectsApi,
) -> None:
    name = unique()
    body = {"apiVersion": f"{G}/{V}", "kind": "Servers", "metadata": {"name": name}, "spec": {}}
    custom.create_namespaced_custom_object(G, V, NS, "servers", body)
    ignored = custom.patch_namespaced_custom_object(
        G, V, NS, "servers", name, {"status": {"ready": True}}
    )
    assert "status" not in ignored
    done = custom.patch_namespaced_custom_object_status(
        G, V, NS, "servers", name, {"status": {"ready": True}}
    )
    assert done["status"] == {"ready": True}
    kept = custom.patch_namespaced_custom_object(
        G, V, NS, "servers", name, {"spec": {"allocationSets": []}}
    )
    assert kept["status"] == {"ready": True}


def test_json_patch_is_applied(
    custom: client.CustomObjectsApi, api_client: client.ApiClient
) -> None:
    name = unique()
    custom.create_namespaced_custom_object(G, V, NS, "workflows", workflow(name))
    ops = [
        {"op": "replace", "path": "/spec/desiredState", "value": "Teardown"},
        {"op": "add", "path": "/spec/hurry", "value": True},
    ]
    custom.patch_namespaced_custom_object(
        G, V, NS, "workflows", name, ops, _content_type="application/json-patch+json"
    )
    got = custom.get_namespaced_custom_object(G, V, NS, "workflows", name)
    assert (got["spec"]["desiredState"], got["spec"]["hurry"]) == ("Teardown", True)


def test_label_selectors_filter_lists(custom: client.CustomObjectsApi) -> None:
    tag = uuid.uuid4().hex[:8]
    a, b = unique(), unique()
    custom.create_namespaced_custom_object(G, V, NS, "workflows", workflow(a, batch=tag, kind="x"))
    custom.create_namespaced_custom_object(G, V, NS, "workflows", workflow(b, batch=tag, kind="y"))
    found = custom.list_namespaced_custom_object(
        G, V, NS, "workflows", label_selector=f"batch={tag},kind!=y"
    )
    assert [o["metadata"]["name"] for o in found["items"]] == [a]
    everywhere = custom.list_cluster_custom_object(G, V, "workflows", label_selector=f"batch={tag}")
    assert sorted(o["metadata"]["name"] for o in everywhere["items"]) == sorted([a, b])


def test_finalizers_hold_deletion_until_removed(custom: client.CustomObjectsApi) -> None:
    name = unique()
    body = workflow(name)
    body["metadata"]["finalizers"] = ["flux-framework.readthedocs.io/workflow"]
    custom.create_namespaced_custom_object(G, V, NS, "workflows", body)
    custom.delete_namespaced_custom_object(G, V, NS, "workflows", name)
    held = custom.get_namespaced_custom_object(G, V, NS, "workflows", name)
    assert held["metadata"]["deletionTimestamp"]
    custom.patch_namespaced_custom_object(
        G, V, NS, "workflows", name, {"metadata": {"finalizers": None}}
    )
    with pytest.raises(ApiException) as info:
        custom.get_namespaced_custom_object(G, V, NS, "workflows", name)
    assert info.value.status == 404


def test_a_watch_from_a_resource_version_replays_and_follows(
    custom: client.CustomObjectsApi,
) -> None:
    tag = uuid.uuid4().hex[:8]
    name = unique()
    start = custom.list_namespaced_custom_object(G, V, NS, "workflows")["metadata"][
        "resourceVersion"
    ]
    custom.create_namespaced_custom_object(G, V, NS, "workflows", workflow(name, batch=tag))

    def later() -> None:
        custom.patch_namespaced_custom_object(
            G, V, NS, "workflows", name, {"spec": {"desiredState": "Setup"}}
        )
        custom.delete_namespaced_custom_object(G, V, NS, "workflows", name)

    threading.Timer(0.3, later).start()
    seen = []
    stream = watch.Watch().stream(
        custom.list_namespaced_custom_object, G, V, NS, "workflows",
        resource_version=start, label_selector=f"batch={tag}", timeout_seconds=10,
    )  # fmt: skip
    for event in stream:
        seen.append((event["type"], event["object"]["spec"]["desiredState"]))
        if event["type"] == "DELETED":
            break
    assert seen == [("ADDED", "Proposal"), ("MODIFIED", "Setup"), ("DELETED", "Setup")]


def test_a_watch_honours_timeout_seconds(custom: client.CustomObjectsApi) -> None:
    tag = uuid.uuid4().hex[:8]
    events = list(
        watch.Watch().stream(
            custom.list_namespaced_custom_object,
            G,
            V,
            NS,
            "workflows",
            label_selector=f"batch={tag}",
            timeout_seconds=1,
        )
    )
    assert events == []


def test_core_secrets_are_served(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    name = f"token-{uuid.uuid4().hex[:8]}"
    core.create_namespaced_secret(
        NS, client.V1Secret(metadata=client.V1ObjectMeta(name=name), data={"token": "c2VjcmV0"})
    )
    assert core.read_namespaced_secret(name, NS).data == {"token": "c2VjcmV0"}

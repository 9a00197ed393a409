"""A list read with ``limit`` and ``continue`` comes in key order, each object once, every
chunk as of the first chunk's resourceVersion (objects created or changed in between are
not in it), as kube-apiserver serves it from etcd; a malformed token or one given with a
resourceVersion is a 400 that says why, and a token whose snapshot is gone is a 410 Expired
with a token for the rest at the current version (runnable on a real cluster, but the
expiry, which only the simulator can force)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from coral2_sim.kube.api import KubeApiServer
from coral2_sim.kube.paging import SNAPSHOTS
from kubernetes import client
from kubernetes.client.rest import ApiException

from pipeline.clients.k8s import DwsClient
from pipeline.errors import Gone
from tests.sim.kube.test_api_conformance import NS, G, V, workflow


def batch(custom: client.CustomObjectsApi, count: int) -> tuple[str, list[str]]:
    """``count`` Workflows under a label of their own: (its selector, their names)."""
    run = uuid.uuid4().hex[:12]
    names = [f"fluxjob-{run}-{i}" for i in range(count)]
    for name in names:
        custom.create_namespaced_custom_object(G, V, NS, "workflows", workflow(name, run=run))
    return f"run={run}", names


def status_of(info: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(info.value.body)
    return found


def test_every_chunk_shows_the_first_chunks_version(custom: client.CustomObjectsApi) -> None:
    selector, names = batch(custom, 7)
    first = custom.list_namespaced_custom_object(
        G, V, NS, "workflows", label_selector=selector, limit=3
    )
    rv, token = first["metadata"]["resourceVersion"], first["metadata"]["continue"]
    assert "remainingItemCount" not in first["metadata"]  # unknown under a label selector
    last = sorted(names)[-1]
    custom.patch_namespaced_custom_object(
        G, V, NS, "workflows", last, {"spec": {"desiredState": "Setup"}}
    )
    run = selector.partition("=")[2]
    custom.create_namespaced_custom_object(
        G, V, NS, "workflows", workflow(f"fluxjob-{run}-zz", run=run)
    )
    pages, seen = [first], [i["metadata"]["name"] for i in first["items"]]
    while token:
        page = custom.list_namespaced_custom_object(
            G, V, NS, "workflows", label_selector=selector, limit=3, _continue=token
        )
        pages.append(page)
        seen += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue")
    assert seen == sorted(names)  # each once, in key order; the later one not in it
    assert {p["metadata"]["resourceVersion"] for p in pages} == {rv}
    [changed] = [i for i in pages[-1]["items"] if i["metadata"]["name"] == last]
    assert changed["spec"]["desiredState"] == "Proposal"  # as it was at the first chunk


def test_a_malformed_token_or_one_with_a_version_is_refused(
    custom: client.CustomObjectsApi,
) -> None:
    selector, _ = batch(custom, 3)
    with pytest.raises(ApiException) as info:
        custom.list_namespaced_custom_object(G, V, NS, "workflows", _continue="not-a-token!")
    assert info.value.status == 400
    assert status_of(info)["message"].startswith("invalid continue token: ")
    first = custom.list_namespaced_custom_object(
        G, V, NS, "workflows", label_selector=selector, limit=1
    )
    with pytest.raises(ApiException) as info:
        custom.list_namespaced_custom_object(
            G,
            V,
            NS,
            "workflows",
            label_selector=selector,
            limit=1,
            _continue=first["metadata"]["continue"],
            resource_version=first["metadata"]["resourceVersion"],
        )
    assert info.value.status == 400
    assert "not allowed when using continue" in status_of(info)["message"]


def test_an_expired_snapshot_is_410_with_a_token_for_the_rest(server: KubeApiServer) -> None:
    api = client.ApiClient(client.Configuration(host=server.url))
    custom = client.CustomObjectsApi(api)
    selector, names = batch(custom, 4)
    first = custom.list_namespaced_custom_object(
        G, V, NS, "workflows", label_selector=selector, limit=2
    )
    for _ in range(SNAPSHOTS):  # lists begun since push the first one's snapshot out
        other, _ = batch(custom, 2)
        custom.list_namespaced_custom_object(G, V, NS, "workflows", label_selector=other, limit=1)
    with pytest.raises(ApiException) as info:
        custom.list_namespaced_custom_object(
            G, V, NS, "workflows", label_selector=selector, _continue=first["metadata"]["continue"]
        )
    status = status_of(info)
    assert (info.value.status, status["reason"]) == (410, "Expired")
    assert status["message"].startswith("The provided continue parameter is too old")
    rest = custom.list_namespaced_custom_object(
        G, V, NS, "workflows", label_selector=selector, _continue=status["metadata"]["continue"]
    )
    got = [i["metadata"]["name"] for i in first["items"] + rest["items"]]
    assert got == sorted(names)
    api.close()


def test_our_client_lists_a_whole_machines_workflows_in_chunks(
    server: KubeApiServer, dws: DwsClient
) -> None:
    names = {f"fluxjob-{i}" for i in range(1201)}
    for name in names:
        dws.create_workflow(workflow(name))
    items, rv = dws.list_objects("workflows")
    assert [i["metadata"]["name"] for i in items] == sorted(names)
    chunks = list(dws.list_pages("workflows"))
    assert [len(c) for c, _ in chunks] == [500, 500, 201]
    assert {r for _, r in chunks} == {rv}


def test_our_client_says_when_a_snapshot_expired_between_chunks(
    server: KubeApiServer, dws: DwsClient
) -> None:
    for i in range(3):
        dws.create_workflow(workflow(f"fluxjob-{i}"))
    pages = dws.list_pages("workflows", limit=1)
    next(pages)
    custom = client.CustomObjectsApi(client.ApiClient(client.Configuration(host=server.url)))
    for i in range(SNAPSHOTS):  # each a list of its own version
        dws.create_workflow(workflow(f"fluxjob-later-{i}"))
        custom.list_namespaced_custom_object(G, V, NS, "workflows", limit=1)
    with pytest.raises(Gone):
        next(pages)

"""What a client sent or got back is its own: changing it changes nothing stored.

Over HTTP that is the wire's doing. The simulated server's store shares
objects with its own routes (no copy between them), so the in-process
clients copy at their edge; these tests hold all three transports to the
same behaviour, and the store to never changing a stored object in place —
the watch log hands the very same objects out.
"""

from __future__ import annotations

from typing import Any

from coral2_sim.kube.api import KubeApiServer
from coral2_sim.kube.resources import TYPES
from kubernetes import client

from tests.sim.kube.test_api_conformance import NS, G, V, unique, workflow


def _stored(custom: client.CustomObjectsApi, name: str) -> dict[str, Any]:
    got: dict[str, Any] = custom.get_namespaced_custom_object(G, V, NS, "workflows", name)
    return got


def test_changing_a_sent_body_afterwards_changes_nothing_stored(
    custom: client.CustomObjectsApi,
) -> None:
    name = unique()
    body = workflow(name)
    custom.create_namespaced_custom_object(G, V, NS, "workflows", body)
    body["spec"]["dwDirectives"].append("#DW jobdw type=xfs capacity=1GiB name=late")
    body["metadata"]["labels"]["late"] = "yes"
    stored = _stored(custom, name)
    assert stored["spec"]["dwDirectives"] == []
    assert "late" not in stored["metadata"]["labels"]

    replaced = {**stored, "spec": {**stored["spec"], "desiredState": "Setup"}}
    custom.replace_namespaced_custom_object(G, V, NS, "workflows", name, replaced)
    replaced["spec"]["dwDirectives"].append("#DW late")
    assert _stored(custom, name)["spec"]["dwDirectives"] == []


def test_changing_an_answer_changes_nothing_stored(custom: client.CustomObjectsApi) -> None:
    name = unique()
    created = custom.create_namespaced_custom_object(G, V, NS, "workflows", workflow(name))
    created["spec"]["dwDirectives"].append("#DW from-create")
    got = _stored(custom, name)
    got["spec"]["dwDirectives"].append("#DW from-get")
    patched = custom.patch_namespaced_custom_object(
        G, V, NS, "workflows", name, {"metadata": {"labels": {"patched": "yes"}}}
    )
    patched["metadata"]["labels"]["patched"] = "changed by the client"
    listed = custom.list_namespaced_custom_object(G, V, NS, "workflows")
    (ours,) = [item for item in listed["items"] if item["metadata"]["name"] == name]
    ours["spec"]["dwDirectives"].append("#DW from-list")

    stored = _stored(custom, name)
    assert stored["spec"]["dwDirectives"] == []
    assert stored["metadata"]["labels"] == {"patched": "yes"}


def test_a_write_leaves_the_stored_version_before_it_unchanged(
    simulated: KubeApiServer,
) -> None:
    store, rtype, name = simulated.store, TYPES[(G, "workflows")], unique()
    store.create(rtype, NS, workflow(name))
    before = store.get(rtype, NS, name, copy=False)
    snapshot = store.get(rtype, NS, name)
    change = {**snapshot, "spec": {**snapshot["spec"], "desiredState": "Setup"}}
    after = store.replace(rtype, NS, name, change, copy=False)
    store.delete(rtype, NS, name, copy=False)

    assert before == snapshot  # the object a watch event of the create shared
    assert after["spec"]["desiredState"] == "Setup"
    assert before["spec"]["desiredState"] == "Proposal"

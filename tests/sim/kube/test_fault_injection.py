"""The simulator's test hooks: injected errors, slow answers, dropped watches, 410 Gone."""

from __future__ import annotations

import time
import uuid

import pytest
from coral2_sim.kube.api import KubeApiServer
from coral2_sim.kube.store import KubeStore
from kubernetes import client, watch
from kubernetes.client.rest import ApiException
from urllib3.exceptions import ProtocolError

G, V, NS = "dataworkflowservices.github.io", "v1alpha7", "default"


def test_the_next_request_fails_with_the_injected_code(
    simulated: KubeApiServer, custom: client.CustomObjectsApi
) -> None:
    simulated.inject(code=500, method="GET")
    with pytest.raises(ApiException) as info:
        custom.list_namespaced_custom_object(G, V, NS, "workflows")
    assert info.value.status == 500
    custom.list_namespaced_custom_object(G, V, NS, "workflows")


def test_slow_answers_are_slow(simulated: KubeApiServer, custom: client.CustomObjectsApi) -> None:
    simulated.inject(delay_s=0.3, method="GET")
    start = time.monotonic()
    custom.list_namespaced_custom_object(G, V, NS, "workflows")
    assert time.monotonic() - start >= 0.3


def test_a_resource_version_older_than_the_log_gets_410() -> None:
    store = KubeStore(event_log_size=3)
    with KubeApiServer(store=store) as server:
        api = client.ApiClient(client.Configuration(host=server.url))
        custom = client.CustomObjectsApi(api)
        for _ in range(6):
            name = f"fluxjob-{uuid.uuid4().int % 10**9}"
            custom.create_namespaced_custom_object(
                G, V, NS, "workflows", {"metadata": {"name": name}, "spec": {}}
            )
        with pytest.raises(ApiException) as info:
            list(
                watch.Watch().stream(
                    custom.list_namespaced_custom_object,
                    G,
                    V,
                    NS,
                    "workflows",
                    resource_version="1",
                    timeout_seconds=2,
                )
            )
        assert info.value.status == 410
        api.close()


def test_a_dropped_watch_breaks_the_stream_after_one_event(
    simulated: KubeApiServer, custom: client.CustomObjectsApi
) -> None:
    tag = uuid.uuid4().hex[:8]
    for _ in range(3):
        custom.create_namespaced_custom_object(
            G,
            V,
            NS,
            "workflows",
            {
                "metadata": {"name": f"fluxjob-{uuid.uuid4().int % 10**9}", "labels": {"t": tag}},
                "spec": {},
            },
        )
    simulated.inject(drop_watch=True, method="GET")
    events = []
    stream = watch.Watch().stream(
        custom.list_namespaced_custom_object,
        G,
        V,
        NS,
        "workflows",
        label_selector=f"t={tag}",
        timeout_seconds=5,
    )
    with pytest.raises(ProtocolError):
        for event in stream:
            events.append(event)
    assert len(events) == 1

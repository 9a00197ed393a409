"""Every object the pipeline writes for a whole-machine job (11,136 computes, 696 rabbits,
a lustre and an xfs directive) stays well under etcd's 1.5 MiB: its Workflow, its
Servers' allocation sets, its Computes — written through the official client to the
simulated API server, which refuses, as kube-apiserver over etcd does, an object past
the limit (``etcdserver: request is too large``) and a request body past 3 MiB (413)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from coral2_sim.kube.api import KubeApiServer
from kubernetes import client

from benchmarks.elcap import COMPUTES, system
from pipeline.clients.k8s import DwsClient
from pipeline.errors import KubeError
from pipeline.model.breakdown import apply_breakdowns, build_allocation_sets
from pipeline.model.directives import parse_directives
from pipeline.model.nnf import breakdown_for
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.model.workflow import workflow_body

#: well under etcd's 1.5 MiB: room for DWS's own status on the same object
MARGIN = 1024 * 1024
DIRECTIVES = [
    "#DW jobdw type=lustre capacity=2000TiB name=global-scratch",
    "#DW jobdw type=xfs capacity=512GiB name=local",
]


@pytest.fixture(scope="module")
def dws() -> Iterator[DwsClient]:
    with KubeApiServer() as server:
        yield DwsClient(client.ApiClient(client.Configuration(host=server.url)))


def size(obj: dict[str, Any]) -> int:
    return len(json.dumps(obj))


def allocation_sets() -> list[list[dict[str, Any]]]:
    """The Servers' allocation sets of a whole-machine job, as the setup task builds them."""
    _, raw = system(COMPUTES)
    mapping = RabbitMapping.parse(raw)
    breakdowns = [
        b
        for i, d in enumerate(parse_directives(DIRECTIVES))
        if (b := breakdown_for(d, workflow="fluxjob-1", index=i, userid=1)) is not None
    ]
    task = {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 96}]}
    apply_breakdowns(breakdowns, [{"type": "node", "count": COMPUTES, "with": [task]}])
    counts = mapping.nodes_per_rabbit(mapping.computes)
    return [
        build_allocation_sets(b["status"]["storage"]["allocationSets"], counts, COMPUTES)
        for b in breakdowns
    ]


def test_the_workflow_fits(dws: DwsClient) -> None:
    body = workflow_body(1, 1001, 1001, DIRECTIVES)
    created = dws.create_workflow(body)
    assert size(created) < MARGIN


def test_the_servers_allocation_sets_fit(dws: DwsClient) -> None:
    for index, sets in enumerate(allocation_sets()):
        name = f"fluxjob-1-{index}"
        dws.create("servers", {"metadata": {"name": name}, "spec": {}})
        patched = dws.patch_servers(name, sets, namespace="default")
        assert size(patched) < MARGIN, size(patched)


def test_the_computes_of_every_node_fit(dws: DwsClient) -> None:
    dws.create("computes", {"metadata": {"name": "fluxjob-1"}})
    hosts = [f"elcap{1001 + i}" for i in range(COMPUTES)]
    patched = dws.patch_computes("fluxjob-1", [{"name": h} for h in hosts], namespace="default")
    assert size(patched) < MARGIN, size(patched)


def test_an_object_past_etcds_limit_is_refused_as_etcd_refuses_it(dws: DwsClient) -> None:
    dws.create("computes", {"metadata": {"name": "fluxjob-2"}})
    huge = [{"name": "x" * 200 + str(i)} for i in range(10_000)]  # about 2.1 MB
    with pytest.raises(KubeError, match="etcdserver: request is too large"):
        dws.patch_computes("fluxjob-2", huge, namespace="default")


def test_a_request_body_past_3_mib_is_refused_413(dws: DwsClient) -> None:
    dws.create("computes", {"metadata": {"name": "fluxjob-3"}})
    huge = [{"name": "x" * 400 + str(i)} for i in range(10_000)]  # about 4.1 MB
    with pytest.raises(KubeError, match="Request entity too large: limit is 3145728"):
        dws.patch_computes("fluxjob-3", huge, namespace="default")

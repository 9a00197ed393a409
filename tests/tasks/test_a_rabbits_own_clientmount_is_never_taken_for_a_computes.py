"""nnf mounts gfs2, lustre and raw storage on the rabbits too (``…-servers`` ClientMounts in
each rabbit's namespace). A rabbit whose nnf-node-manager is down leaves its ClientMount
without status: that rabbit is never reported as a compute that did not mount or unmount
(to drain, or to mark Disabled in SystemStatus); it is reported as a rabbit."""

from __future__ import annotations

from typing import Any

from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import WORKFLOW_LABEL, DwsClient
from pipeline.perform.reads import clientmounts_not_in_state, rabbits_not_in_state

NAME = "fluxjob-90"


def clientmount(dws: DwsClient, node: str, side: str, status: dict[str, Any] | None) -> None:
    body = {
        "metadata": {
            "name": f"default-{NAME}-0-{side}",
            "namespace": node,
            "labels": {WORKFLOW_LABEL: NAME},
        },
        "spec": {"node": node, "desiredState": "mounted", "mounts": [{"mountPath": "/mnt"}]},
    }
    dws.create("clientmounts", body, namespace=node)
    if status is not None:
        dws.patch(
            "clientmounts",
            body["metadata"]["name"],
            {"status": status},
            namespace=node,
            status=True,
        )


MOUNTED = {"allReady": True, "mounts": [{"state": "mounted", "ready": True}]}


def test_a_rabbit_whose_daemon_is_down_is_no_compute_that_did_not_mount(
    kube: tuple[KubeApiServer, DwsClient],
) -> None:
    _, dws = kube
    clientmount(dws, "compute01", "computes", MOUNTED)
    clientmount(dws, "compute02", "computes", None)  # its clientmountd never answered
    clientmount(dws, "rabbit1", "servers", None)  # its nnf-node-manager is down
    assert clientmounts_not_in_state(dws, NAME, "mounted") == ["compute02"]
    assert clientmounts_not_in_state(dws, NAME, "unmounted") == ["compute01", "compute02"]
    assert rabbits_not_in_state(dws, NAME, "mounted") == ["rabbit1"]


def test_a_rabbit_that_mounted_is_not_reported(kube: tuple[KubeApiServer, DwsClient]) -> None:
    _, dws = kube
    clientmount(dws, "rabbit2", "servers", MOUNTED)
    assert rabbits_not_in_state(dws, NAME, "mounted") == []
    assert clientmounts_not_in_state(dws, NAME, "mounted") == []

"""The simulated clientmount daemon runs as root in the demo: a ClientMount whose mount
path leads outside its node's directory is neither made nor removed, and reports the
error. And its service flags outlive the node worker, as systemd's unit state does: a
restarted worker finds running what it left running, and does the mounts still owed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from coral2_sim.kube.api import KubeApiServer
from coral2_sim.node.agent import SimulatedAgent, confined
from coral2_sim.node.service import SimulatedService

from pipeline.clients.k8s import DwsClient


@pytest.mark.parametrize(
    "path", ["../../etc", "/../../../root/.ssh", "a/../../other-node", "x/../../../"]
)
def test_a_path_that_climbs_out_of_the_nodes_root_is_refused(tmp_path: Path, path: str) -> None:
    assert confined(tmp_path / "n1", path) is None


def test_a_path_through_a_symbolic_link_outside_is_refused(tmp_path: Path) -> None:
    (tmp_path / "n1").mkdir()
    (tmp_path / "n1" / "escape").symlink_to(tmp_path.parent)
    assert confined(tmp_path / "n1", "/escape/victim") is None


def test_an_ordinary_mount_path_lands_under_the_nodes_root(tmp_path: Path) -> None:
    assert confined(tmp_path / "n1", "/mnt/nnf/job-7") == (tmp_path / "n1/mnt/nnf/job-7").resolve()


def test_the_service_flags_outlive_the_process(tmp_path: Path) -> None:
    state = tmp_path / "services.json"
    first = SimulatedService(state_file=state)
    first.start("n1")
    first.start("n2")
    first.stop("n2")
    assert SimulatedService(state_file=state).running_hosts() == ["n1"]


def clientmount(host: str, mount_path: str) -> dict[str, Any]:
    return {
        "apiVersion": "dataworkflowservices.github.io/v1alpha6",
        "kind": "ClientMount",
        "metadata": {"name": f"cm-{abs(hash(mount_path)) % 10**6}", "namespace": host},
        "spec": {"desiredState": "mounted", "mounts": [{"mountPath": mount_path}]},
    }


def test_an_escaping_clientmount_is_reported_and_nothing_is_made(
    tmp_path: Path, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    dws = kube[1]
    victim = tmp_path / "victim"
    created = dws.create("clientmounts", clientmount("n9", "../victim"), namespace="n9")
    agent = SimulatedAgent(dws, ["n9"], tmp_path / "mnt")
    agent.service.start("n9")
    agent.reconcile("n9")
    status = dws.get("clientmounts", created["metadata"]["name"], namespace="n9")["status"]
    assert status["allReady"] is False and "leads outside" in status["error"]["message"]
    assert not victim.exists()


def test_a_restarted_agent_does_the_mounts_its_running_service_owes(
    tmp_path: Path, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    dws = kube[1]
    SimulatedAgent(dws, ["n8"], tmp_path).service.start("n8")  # then the worker is killed
    created = dws.create("clientmounts", clientmount("n8", "/mnt/job"), namespace="n8")
    again = SimulatedAgent(dws, ["n8"], tmp_path)
    assert again.service.running("n8")
    again.start()
    try:
        name = created["metadata"]["name"]
        for _ in range(100):
            status = dws.get("clientmounts", name, namespace="n8").get("status") or {}
            if status.get("allReady"):
                break
            time.sleep(0.05)
        assert status.get("allReady") is True
        assert (tmp_path / "n8/mnt/job").is_dir()
    finally:
        again.stop()


def test_apart_from_the_node_worker_it_follows_the_service_the_worker_starts(
    tmp_path: Path, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    """``sim clientmountd`` runs beside the node worker, as nnf-clientmountd does: the
    worker only starts the service (in the shared state file); the daemon sees it start
    and mounts — and a killed worker does not take the daemon with it."""
    dws = kube[1]
    created = dws.create("clientmounts", clientmount("n7", "/mnt/apart"), namespace="n7")
    daemon = SimulatedAgent(dws, ["n7"], tmp_path).start(apart=True)
    try:
        worker_side = SimulatedService(state_file=tmp_path / ".state" / "clientmount-services.json")
        worker_side.start("n7")  # the node worker's prolog, in its own process
        name = created["metadata"]["name"]
        for _ in range(200):
            status = dws.get("clientmounts", name, namespace="n7").get("status") or {}
            if status.get("allReady"):
                break
            time.sleep(0.05)
        assert status.get("allReady") is True
        assert (tmp_path / "n7/mnt/apart").is_dir()
    finally:
        daemon.stop()

"""The node prolog waits for the node's mounts, raises prolog-timeout once, stops the service."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from node_worker import perilog
from pipeline.clients.k8s import DwsClient
from pipeline.model.workflow import WORKFLOW_LABEL, workflow_body
from pipeline.sim.kube.api import KubeApiServer
from pipeline.sim.node.agent import SimulatedAgent
from pipeline.store import Store


@pytest.fixture(scope="module")
def dws() -> Iterator[DwsClient]:
    with KubeApiServer() as server:
        yield DwsClient(client.ApiClient(client.Configuration(host=server.url)))


def clientmount(dws: DwsClient, jobid: int, node: str, desired: str = "mounted") -> None:
    body = {
        "metadata": {
            "name": f"default-fluxjob-{jobid}-0-computes",
            "namespace": node,
            "labels": {WORKFLOW_LABEL: f"fluxjob-{jobid}"},
        },
        "spec": {
            "node": node,
            "desiredState": desired,
            "mounts": [{"mountPath": f"/mnt/nnf/{jobid}", "type": "xfs"}],
        },
    }
    dws.create("clientmounts", body, namespace=node)


def exceptions(store: Store) -> list[dict[str, object]]:
    store.outbox.ensure_group()
    return [d.message.payload for d in store.outbox.read("t", count=100)]


def test_mounts_that_never_come_raise_prolog_timeout_once_and_stop_the_service(
    dws: DwsClient, store: Store, tmp_path: Path
) -> None:
    dws.create_workflow(workflow_body(71, 1001, 1001, ["#DW jobdw type=xfs capacity=1GiB name=x1"]))
    clientmount(dws, 71, "compute01")
    agent = SimulatedAgent(dws, ["compute01"], tmp_path)  # its service flag, no daemon running
    for _ in range(2):
        outcome = perilog.prolog(
            "compute01", 71, True, dws=dws, store=store, service=agent.service, timeout_s=0.2
        )
        assert outcome == "timeout"
        assert not agent.service.running("compute01")
    assert exceptions(store) == [
        {"id": 71, "type": "prolog-timeout", "severity": 0, "note": "dws_environment timeout"}
    ]


def test_the_daemon_mounts_and_the_prolog_ends_when_prerun_completes(
    dws: DwsClient, store: Store, tmp_path: Path
) -> None:
    dws.create_workflow(workflow_body(72, 1001, 1001, ["#DW jobdw type=xfs capacity=1GiB name=x2"]))
    clientmount(dws, 72, "compute02")
    agent = SimulatedAgent(dws, ["compute02"], tmp_path).start()
    outcome: list[str] = []
    prolog = threading.Thread(
        target=lambda: outcome.append(
            perilog.prolog(
                "compute02", 72, True, dws=dws, store=store, service=agent.service, timeout_s=20
            )
        )
    )
    prolog.start()
    try:
        name = "default-fluxjob-72-0-computes"
        deadline = time.monotonic() + 10
        while (dws.get("clientmounts", name, namespace="compute02").get("status") or {}).get(
            "allReady"
        ) is not True:
            assert time.monotonic() < deadline, "the daemon never mounted"
            time.sleep(0.02)
        assert (tmp_path / "compute02" / "mnt" / "nnf" / "72").is_dir()
        assert outcome == []  # still waiting: PreRun is not complete
        # DWS's part: every ClientMount is mounted, PreRun completes
        dws.patch("workflows", "fluxjob-72", {"status": {"state": "PreRun", "ready": True}})
        prolog.join(timeout=10)
    finally:
        agent.stop()
    assert outcome == ["mounted"]
    assert not agent.service.running("compute02")  # stopped again after the mounts
    assert exceptions(store) == []


def test_a_job_without_dw_just_stops_the_service(
    dws: DwsClient, store: Store, tmp_path: Path
) -> None:
    agent = SimulatedAgent(dws, ["compute03"], tmp_path)
    agent.service.start("compute03")
    assert (
        perilog.prolog(
            "compute03", 73, False, dws=dws, store=store, service=agent.service, timeout_s=1
        )
        == "stopped"
    )
    assert not agent.service.running("compute03")

"""The RBAC rules we ship grant the pipeline's ServiceAccount exactly what its client
calls: the demo's batch and ``rabbitmapping`` run with them enforced, nothing is
refused, and every verb they grant is one the pipeline used.

Five reads and writes are on paths the demo's batch does not take; the fixture makes
them with the pipeline's own client calls, as the account: a Workflow token read (a
``#DW container`` job), the ClientMounts looked at when a PreRun times out, a rabbit
disabled by ``dws.abort``, and the owner and the Servers of a persistent storage
instance a job names.
The e2e tests that take those paths run under the same rules."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from coral2_sim.demo.lifecycle import Report, demo_system, run_batch
from coral2_sim.demo.model import sample_path
from coral2_sim.kube.identities import PIPELINE_ROLES, PIPELINE_USER
from coral2_sim.kube.rbac import granted
from kubernetes.client import ApiClient, CoreV1Api
from rich.console import Console

from pipeline.clients.k8s import DwsClient
from pipeline.clients.kube_auth import api_client
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.perform.reads import (
    clientmounts_not_in_state,
    persistent_owners,
    persistent_placements,
)

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy" / "k8s" / "coral2-pipeline.yaml"

#: the module's fixture runs the demo's whole batch and its sweep: a hang is caught, a
#: machine busy with other work is waited for
pytestmark = pytest.mark.timeout(900)


@dataclass
class Run:
    report: Report
    rabbitmapping: subprocess.CompletedProcess[str]
    used: set[tuple[str, str, str]]
    refused: list[str]
    as_account: bool


def off_the_batch(admin: ApiClient, dws: DwsClient) -> None:
    """The account's calls on the paths the demo's batch does not take."""
    secret = {"metadata": {"name": "fluxjob-1-token"}, "data": {"token": "c2VjcmV0"}}
    CoreV1Api(admin).create_namespaced_secret("default", secret)
    token = {"secretName": "fluxjob-1-token", "secretNamespace": "default"}
    workflow = {"metadata": {"name": "fluxjob-1"}, "status": {"workflowToken": token}}
    assert dws.workflow_token(workflow) == "secret"
    assert clientmounts_not_in_state(dws, "fluxjob-1", "mounted") == []
    dws.patch_storage("rabbit1", {"metadata": {"annotations": {"checked-by": "rbac-test"}}})
    assert persistent_owners(dws, ["nobodys"]) == {}  # read, and not there
    instance = {"metadata": {"name": "placed"}, "spec": {"fsType": "xfs"}}
    DwsClient(admin).create("persistentstorageinstances", instance)
    assert persistent_placements(dws, ["placed"]) == {}  # its Servers read, and not there


@pytest.fixture(scope="module")
def run() -> Run:
    """The demo's batch, then ``rabbitmapping`` with the account's kubeconfig."""
    mapping = RabbitMapping.load(sample_path("sample-rabbitmapping.json"))
    with demo_system(mapping, config=str(sample_path("sample-cluster.toml"))) as system:
        assert system.kube is not None
        report = run_batch(system, Console(file=io.StringIO(), width=200), cases=False)
        kubeconfig = system.kube.pipeline_kubeconfig
        env = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_")}
        rabbitmapping = subprocess.run(
            [sys.executable, "-m", "pipeline.cli", "rabbitmapping", "-k", str(kubeconfig)],
            env=env,
            capture_output=True,
            check=False,
            text=True,
            timeout=120,
        )
        assert kubeconfig is not None
        account = DwsClient(api_client(kubeconfig=str(kubeconfig)))
        try:
            off_the_batch(system.kube.api(), account)
        finally:
            account.close()  # its pooled sockets, before the system stops
        used, refused = system.kube.rbac()
    return Run(report, rabbitmapping, used.get(PIPELINE_USER, set()), refused, bool(kubeconfig))


def test_the_demos_batch_ends_as_expected_with_the_rules_enforced(run: Run) -> None:
    assert run.as_account  # the pipeline's processes spoke with the account's token
    assert run.report.ok, (run.report.unexpected, run.report.leaks)
    assert run.refused == []


def test_rabbitmapping_runs_as_the_pipelines_account(run: Run) -> None:
    assert run.rabbitmapping.returncode == 0, run.rabbitmapping.stderr
    assert '"compute01": "rabbit1"' in run.rabbitmapping.stdout.replace("\n", "")


def test_every_granted_verb_is_one_the_pipeline_used(run: Run) -> None:
    rules = granted(list(yaml.safe_load_all(MANIFEST.read_text())), PIPELINE_ROLES)
    assert rules == run.used, {"granted, never used": rules - run.used, "used": run.used - rules}

"""An admin's real ``kubectl`` against ``coral2-pipeline sim kube-api --with-dws``: discovery
resolves every resource the simulator holds, ``get`` prints tables (``-A``, ``-w``) and
``-o yaml|json|jsonpath``, ``create -f`` validates on the server with kubectl's default
validation (an unknown field is refused), ``patch --type=merge|json`` and ``delete`` work,
and a strategic-merge patch (kubectl's default) of a custom resource gets 415.

``make test`` installs Debian's kubectl when the machine has none."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from coral2_sim.kube.resources import RESOURCE_TYPES

WORKFLOW = """\
apiVersion: dataworkflowservices.github.io/v1alpha7
kind: Workflow
metadata:
  name: fluxjob-42
spec:
  desiredState: Proposal
  dwDirectives: ["#DW jobdw type=xfs capacity=10GiB name=scratch"]
  wlmID: flux
  jobID: 42
  userID: 1001
  groupID: 1001
"""


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.fail("kubectl is not installed: run `make test` (it installs kubernetes-client)")
    workdir = tmp_path_factory.mktemp("kubectl")
    config = workdir / "kubeconfig"
    argv = [sys.executable, "-m", "pipeline.cli", "sim", "kube-api", "--with-dws"]
    server = subprocess.Popen(
        [*argv, "--kubeconfig", str(config)], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    assert server.stdout.readline().startswith("http://127.0.0.1:")
    yield [binary, "--kubeconfig", str(config)]
    server.terminate()
    server.wait(timeout=30)
    server.stdout.close()


def run(
    kubectl: list[str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    return subprocess.run(
        [*kubectl, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_api_resources_lists_every_type_the_simulator_holds(kubectl: list[str]) -> None:
    out = run(kubectl, "api-resources").stdout
    for plural in RESOURCE_TYPES:
        assert plural.plural in out


def test_get_prints_storages_in_every_namespace_and_as_json_yaml_and_jsonpath(
    kubectl: list[str],
) -> None:
    table = run(kubectl, "get", "storages", "-A")
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert "rabbit1" in table.stdout and "Ready" in table.stdout
    items = json.loads(run(kubectl, "get", "storages", "-o", "json").stdout)["items"]
    assert {i["metadata"]["name"] for i in items} == {"rabbit1", "rabbit2", "rabbit3", "rabbit4"}
    assert "kind: Storage" in run(kubectl, "get", "storage", "rabbit1", "-o", "yaml").stdout
    path = run(kubectl, "get", "storage", "rabbit1", "-o", "jsonpath={.status.status}")
    assert path.stdout == "Ready"


def test_create_validates_on_the_server_patch_and_delete_work(
    kubectl: list[str], tmp_path: Path
) -> None:
    manifest = tmp_path / "wf.yaml"
    manifest.write_text(WORKFLOW)
    created = run(kubectl, "create", "-f", str(manifest))
    assert created.returncode == 0, created.stderr
    bad = run(
        kubectl,
        "create",
        "-f",
        "-",
        stdin=WORKFLOW.replace("fluxjob-42", "fluxjob-43") + "color: red\n",
    )
    assert bad.returncode == 1
    assert 'unknown field "color"' in bad.stderr
    merged = run(
        kubectl,
        "patch",
        "workflow",
        "fluxjob-42",
        "--type=merge",
        "-p",
        '{"metadata":{"labels":{"a":"b"}}}',
    )
    assert merged.returncode == 0, merged.stderr
    teardown = '[{"op":"replace","path":"/spec/desiredState","value":"Teardown"}]'
    jsonp = run(kubectl, "patch", "workflow", "fluxjob-42", "--type=json", "-p", teardown)
    assert jsonp.returncode == 0, jsonp.stderr
    shown = json.loads(run(kubectl, "get", "workflow", "fluxjob-42", "-o", "json").stdout)
    assert (shown["metadata"]["labels"], shown["spec"]["desiredState"]) == ({"a": "b"}, "Teardown")
    deleted = run(kubectl, "delete", "workflow", "fluxjob-42", "--wait=false")
    assert deleted.returncode == 0, deleted.stderr


def test_get_watch_prints_each_change(kubectl: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    watch = subprocess.Popen(
        [*kubectl, "get", "storages", "-w"], stdout=subprocess.PIPE, text=True, env=env
    )
    assert watch.stdout is not None
    try:
        assert watch.stdout.readline().split()[:2] == ["NAME", "STATE"]
        for _ in range(4):
            watch.stdout.readline()
        time.sleep(0.5)
        run(
            kubectl,
            "patch",
            "storage",
            "rabbit2",
            "--type=merge",
            "-p",
            '{"spec":{"state":"Disabled"}}',
        )
        line = watch.stdout.readline()
        assert line.split()[:2] == ["rabbit2", "Disabled"]
    finally:
        watch.terminate()
        watch.wait(timeout=10)
        watch.stdout.close()


def test_a_strategic_merge_patch_of_a_custom_resource_is_refused_as_kube_apiserver_does(
    kubectl: list[str],
) -> None:
    """kubectl's default patch type is strategic merge, which a custom resource does not
    take: the real API server answers 415, and so does the simulator."""
    label = '{"metadata":{"labels":{"a":"b"}}}'
    refused = run(kubectl, "patch", "storage", "rabbit1", "-p", label)
    assert refused.returncode == 1
    assert "the body of the request was in an unknown format" in refused.stderr
    assert "application/merge-patch+json" in refused.stderr

"""``sim kube-api --token-auth-file --rbac`` authenticates and authorizes as kube-apiserver
does: no token is 401, a verb the account's roles lack is 403 with kube-apiserver's
message (which an admin's real kubectl prints as it prints a real server's), a
RoleBinding grants only in its namespace, a subresource needs its own rule, and
system:masters may do anything. It serves TLS: kubectl sends no token over plain HTTP."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from coral2_sim.kube.identities import PIPELINE_USER, KubeEndpoint, with_identities
from coral2_sim.redis_server import free_port

Completed = subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeEndpoint]:
    """The server over TLS, with the shipped RBAC rules and a token for each user."""
    port = free_port()
    kube = with_identities(port, tmp_path_factory.mktemp("rbac"))
    argv = [sys.executable, "-m", "pipeline.cli", "sim", "kube-api", "--with-dws"]
    process = subprocess.Popen(
        [*argv, "--port", str(port), *kube.server_args()], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == kube.url
    yield kube
    process.terminate()
    process.wait(timeout=30)
    process.stdout.close()


def kubectl(
    config: Path | None, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.fail("kubectl is not installed: run `make test` (it installs kubernetes-client)")
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    where = ["--kubeconfig", str(config)] if config else []
    return subprocess.run(
        [binary, *where, *args],
        env=env,
        input=stdin,
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
    )


def test_a_request_without_a_token_is_unauthorized(server: KubeEndpoint) -> None:
    assert server.tls_cert is not None
    context = ssl.create_default_context(cafile=str(server.tls_cert))
    path = "/apis/dataworkflowservices.github.io/v1alpha7/namespaces/default/workflows"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(server.url + path, timeout=10, context=context)
    assert refused.value.code == 401
    assert json.loads(refused.value.read())["reason"] == "Unauthorized"


def test_the_account_lists_workflows_in_its_namespace(server: KubeEndpoint) -> None:
    account = server.pipeline_kubeconfig
    done = kubectl(account, "get", "workflows", "-n", "default")
    assert done.returncode == 0, done.stderr


def test_the_account_may_not_list_workflows_across_namespaces(
    server: KubeEndpoint,
) -> None:
    account = server.pipeline_kubeconfig
    done = kubectl(account, "get", "workflows", "-A")
    assert done.returncode != 0
    assert (
        "Error from server (Forbidden): workflows.dataworkflowservices.github.io is forbidden: "
        f'User "{PIPELINE_USER}" cannot list resource "workflows" in API group '
        '"dataworkflowservices.github.io" at the cluster scope'
    ) in done.stderr


def test_the_account_may_not_delete_a_storage(server: KubeEndpoint) -> None:
    account = server.pipeline_kubeconfig
    done = kubectl(account, "delete", "storage", "rabbit1", "-n", "default")
    assert done.returncode != 0
    assert (
        'storages.dataworkflowservices.github.io "rabbit1" is forbidden: '
        f'User "{PIPELINE_USER}" cannot delete resource "storages" in API group '
        '"dataworkflowservices.github.io" in the namespace "default"'
    ) in done.stderr


def test_the_account_may_patch_a_storage_but_not_its_status(server: KubeEndpoint) -> None:
    account = server.pipeline_kubeconfig
    patch = ("patch", "storage", "rabbit1", "--type=merge")
    done = kubectl(account, *patch, "-p", '{"metadata": {"labels": {"checked": "yes"}}}')
    assert done.returncode == 0, done.stderr
    status = kubectl(account, *patch, "--subresource=status", "-p", '{"status": {}}')
    assert status.returncode != 0
    # kubectl reads the subresource before it patches it: refused at the first step
    assert 'cannot get resource "storages/status"' in status.stderr


def test_an_admin_in_system_masters_may_do_anything(server: KubeEndpoint) -> None:
    admin = server.admin_kubeconfig
    done = kubectl(admin, "get", "workflows", "-A")
    assert done.returncode == 0, done.stderr

"""The pipeline's account may read every Secret in the Workflows' namespace (RBAC cannot
name Secrets by pattern), so the client reads only the one DWS makes for a Workflow's
token, ``<workflow>-token`` in the Workflow's namespace, as nnf-sos names it: a status
naming any other Secret — the token's signing key beside it, a site's own — is refused,
and nothing of it reaches a job's environment."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from coral2_sim.kube.api import KubeApiServer
from kubernetes import client

from pipeline.clients.k8s import DwsClient
from pipeline.errors import Invalid


@pytest.fixture
def dws() -> Iterator[DwsClient]:
    with KubeApiServer() as server:
        api = client.ApiClient(client.Configuration(host=server.url))
        dws = DwsClient(api, outage_budget_s=1)
        for name in ("fluxjob-1-token", "fluxjob-1-token-server", "site-ldap"):
            secret = {
                "metadata": {"name": name},
                "data": {"token": base64.b64encode(b"x").decode()},
            }
            dws.core.create_namespaced_secret("default", secret)
        yield dws
        api.close()


def workflow(secret: str, namespace: str = "default") -> dict[str, object]:
    ref = {"secretName": secret, "secretNamespace": namespace}
    return {
        "metadata": {"name": "fluxjob-1", "namespace": "default"},
        "status": {"workflowToken": ref},
    }


def test_the_workflows_own_token_is_read(dws: DwsClient) -> None:
    assert dws.workflow_token(workflow("fluxjob-1-token")) == "x"


@pytest.mark.parametrize(
    ("secret", "namespace"),
    [
        ("fluxjob-1-token-server", "default"),
        ("site-ldap", "default"),
        ("fluxjob-1-token", "kube-system"),
    ],
)
def test_any_other_secret_is_refused_naming_both(
    dws: DwsClient, secret: str, namespace: str
) -> None:
    with pytest.raises(Invalid) as refused:
        dws.workflow_token(workflow(secret, namespace))
    assert f"names the Secret {namespace}/{secret}, not default/fluxjob-1-token" in str(
        refused.value
    )

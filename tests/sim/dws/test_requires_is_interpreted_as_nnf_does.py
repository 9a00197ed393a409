"""``requires=`` on a jobdw is taken as nnf-sos takes it in Proposal: ``copy-offload``
puts ``copy-offload`` and ``container-auth`` in the Workflow's ``status.requires``, and
needs the site's user container TLS Secret, without which Proposal fails Fatal with
nnf's words. No token is made for a Workflow without a ``container`` directive."""

from __future__ import annotations

from coral2_sim.dws.nnf_proposal import USER_CONTAINER_TLS

from tests.sim.dws.conftest import DwsSide
from tests.sim.dws.wlm_helpers import wait_state, workflow

COPY_OFFLOAD = "#DW jobdw type=xfs capacity=10GiB name=scratch requires=copy-offload"


def test_copy_offload_is_required_and_no_token_made(dws_side: DwsSide) -> None:
    dws_side.dws.create_workflow(workflow(70, [COPY_OFFLOAD]))
    status = wait_state(dws_side.dws, "fluxjob-70", "Proposal")["status"]
    assert status["requires"] == ["copy-offload", "container-auth"]
    assert "workflowToken" not in status


def test_a_site_without_the_user_container_tls_secret_fails_proposal(
    dws_side: DwsSide,
) -> None:
    dws_side.dws.core.delete_namespaced_secret(USER_CONTAINER_TLS, "default")
    dws_side.dws.create_workflow(workflow(71, [COPY_OFFLOAD]))
    status = wait_state(dws_side.dws, "fluxjob-71", "Proposal", ready=False)["status"]
    assert status["message"] == "DW Directive 0: Internal error: "
    errors = [d["error"] for d in status["drivers"] if d.get("status") == "Error"]
    assert errors == [
        "internal error: the administrator must configure the user container TLS secret for "
        f'the system. See the copy-offload docs: secrets "{USER_CONTAINER_TLS}" not found'
    ]

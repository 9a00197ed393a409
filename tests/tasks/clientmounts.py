"""A node's ClientMount of a job's Workflow, in the state the test needs, as the DWS
controller and the node's clientmount daemon would leave it."""

from __future__ import annotations

from pipeline.clients.k8s import DwsClient


def clientmount(dws: DwsClient, workflow: str, node: str, state: str) -> None:
    """``node``'s ClientMount of ``workflow``, its one mount settled (ready) in ``state``
    (``mounted``, ``unmounted``)."""
    name = f"default-{workflow}-0-computes"
    labels = {"dataworkflowservices.github.io/workflow.name": workflow}
    body = {"metadata": {"name": name, "labels": labels}, "spec": {"node": node}}
    dws.create("clientmounts", body, namespace=node)
    status = {"mounts": [{"state": state, "ready": True}]}
    dws.patch("clientmounts", name, {"status": status}, namespace=node, status=True)

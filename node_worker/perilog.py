"""The clientmount node prolog and epilog (flux-coral2's ``zstop_nnf_clientmount.sh`` and
``start_nnf_clientmount.sh``).

* Prolog of a DW job: start the clientmount service, wait until the job's
  Workflow completes PreRun — every ClientMount of the job, this node's
  among them, is mounted; the moment flux-coral2 sends ``dws_environment``
  — at most ``rabbit.prolog_timeout`` seconds, then raise ``prolog-timeout``
  "dws_environment timeout" (once per job), and stop the service again.
  (Waiting for this node's own ClientMounts alone is not enough: with two
  directives the second one's ClientMount may not exist yet.)
* Prolog of a job without ``#DW``: stop the service.
* Epilog: start the service, so the job's file systems can be unmounted.

Both are idempotent: running one twice does what running it once does.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from node_worker.service import ClientmountService
from pipeline.clients.k8s import DwsClient
from pipeline.errors import NotFound
from pipeline.store import Store
from pipeline.store.outbox import OutboxMessage

PAST_PRERUN = ("PostRun", "DataOut", "Teardown")


def mount_state(dws: DwsClient, jobid: int) -> str:
    """``mounted`` (PreRun complete: every ClientMount of the job is up, which is what the
    ``dws_environment`` event tells flux-coral2's script), ``pending``, or ``gone`` (the
    Workflow is gone or past its run)."""
    try:
        workflow = dws.get_workflow(f"fluxjob-{jobid}")
    except NotFound:
        return "gone"
    if (workflow.get("spec") or {}).get("desiredState") in PAST_PRERUN:
        return "gone"
    status = workflow.get("status") or {}
    if status.get("state") == "PreRun" and status.get("ready"):
        return "mounted"
    return "pending"


def prolog(
    host: str,
    jobid: int,
    dw: bool,
    *,
    dws: DwsClient,
    store: Store,
    service: ClientmountService,
    timeout_s: float,
    poll_s: float = 0.05,
    clock: Callable[[], float] = time.monotonic,
) -> str:
    """Run the node prolog; return ``mounted``, ``stopped``, ``gone`` or ``timeout``."""
    if not dw:
        service.stop(host)
        return "stopped"
    service.start(host)
    try:
        deadline = clock() + timeout_s
        while True:
            state = mount_state(dws, jobid)
            if state != "pending":
                return state
            if clock() >= deadline:
                payload = {"id": jobid, "type": "prolog-timeout", "severity": 0}
                payload["note"] = "dws_environment timeout"
                message = OutboxMessage("exception", jobid, payload)
                store.outbox.append_once(message, "exception:prolog-timeout")
                return "timeout"
            time.sleep(poll_s)
    finally:
        service.stop(host)


def epilog(host: str, service: ClientmountService) -> str:
    """Run the node epilog: start the service so unmounts can happen."""
    service.start(host)
    return "started"

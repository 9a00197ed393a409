"""The node's part of a job, as the pipeline asks for it: nothing here waits or polls.

flux-coral2 runs scripts on every node: the clientmount prolog
(``zstop_nnf_clientmount.sh``: start the clientmount service for a ``#DW``
job, wait for the ``dws_environment`` event, stop it; stop it for any other
job), the clientmount epilog (``start_nnf_clientmount.sh``) and ``flux
slingshot prolog|epilog``. Here the pipeline sends each step when it is
time, so each function below does one thing and returns:

* :func:`prolog` at RUN: the job's CXI services, and the clientmount service
  started (``#DW``) or stopped (any other job);
* :func:`clientmount` once a ``#DW`` job's PreRun is complete: stop it again;
* :func:`epilog` at CLEANUP: the CXI services destroyed (those still busy are
  returned), the clientmount service started so file systems can unmount.

Each is idempotent: running one twice does what running it once does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from node_worker.cxi import Nic, create_job_services, destroy_job_services
from node_worker.service import ClientmountService
from pipeline.errors import CxiError, PipelineError
from pipeline.states.nodes import PROLOG_EXCEPTION  # what any other failed prolog raises

log = logging.getLogger("coral2_pipeline.node_worker")

#: The exception type of a failed CXI prolog (as ``flux slingshot prolog`` fails it).
CXI_EXCEPTION = "cray-slingshot"


@dataclass
class Outcome:
    """What a node step did: ``error`` (and its exception type) when it could not."""

    error: str = ""
    error_type: str = PROLOG_EXCEPTION
    services: dict[str, int] = field(default_factory=dict)
    busy: list[str] = field(default_factory=list)


def _clientmount(service: ClientmountService, host: str, action: str | None) -> None:
    if action == "start":
        service.start(host)
    elif action == "stop":
        service.stop(host)
    elif action is not None:
        raise ValueError(f"unknown clientmount action {action!r} (start or stop)")


def prolog(
    host: str,
    jobid: int,
    userid: int,
    *,
    clientmount: str | None,
    cxi: dict[str, Any] | None,
    service: ClientmountService,
    nic_of: Callable[[str], Nic],
) -> Outcome:
    """The node's prolog: CXI services first (they can fail the job), then clientmount."""
    outcome = Outcome()
    if cxi is not None:
        try:
            created = create_job_services(
                nic_of(host), userid, list(cxi["vnis"]), int(cxi.get("ncores", 0))
            )
        except CxiError as exc:
            return Outcome(error=str(exc), error_type=CXI_EXCEPTION)
        for warning in created.warnings:
            log.warning("job %s on %s: %s", jobid, host, warning)
        outcome.services = created.services
    try:
        _clientmount(service, host, clientmount)
    except PipelineError as exc:  # e.g. systemctl failed: the job cannot have its mounts
        return Outcome(error=str(exc), services=outcome.services)
    return outcome


def clientmount(host: str, action: str, service: ClientmountService) -> None:
    """Start or stop the clientmount service."""
    _clientmount(service, host, action)


def epilog(
    host: str,
    userid: int,
    *,
    clientmount: str | None,
    cxi: dict[str, Any] | None,
    service: ClientmountService,
    nic_of: Callable[[str], Nic],
    busy_wait_s: float = 5.0,
) -> Outcome:
    """The node's epilog: start clientmount (unmounts), destroy the CXI services (retrying
    busy ones for ``busy_wait_s``)."""
    _clientmount(service, host, clientmount)
    if cxi is None:
        return Outcome()
    nic = nic_of(host)
    busy = destroy_job_services(nic, userid, list(cxi["vnis"]), retry_busy_s=busy_wait_s)
    return Outcome(busy=busy)

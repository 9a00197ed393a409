"""Hardware collectives: multicast address reservations at the Slingshot fabric manager.

Pure rules: how many addresses a job gets (HPE's formula), which jobs are
eligible, the reservation's name at the fabric manager, the job environment
libfabric reads, and what a reservation looks like in the job record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pipeline.model.numbers import natural_or_none

#: The fabric manager's path for reservations (WLM endpoints) and for multicast trees.
JOBS_PATH = "/fabric/collectives/jobs"
MULTICASTS_PATH = "/fabric/collectives/multicasts"
#: What ``status -j`` and the logs show instead of a session token.
REDACTED = "<redacted>"


def addresses_per_job(
    total: int, system_nodes: int, min_job_nodes: int, jobs_sharing: int = 1
) -> int:
    """HPE's multicast addresses per job: ``(M / (S / s)) / j``, rounded down.

    ``total`` (M) addresses for collectives, ``system_nodes`` (S), the smallest
    eligible job ``min_job_nodes`` (s), ``jobs_sharing`` (j) jobs expected to
    share nodes. El Capitan: ``addresses_per_job(4086, 11136, 64)`` is 23.
    """
    for name, value in (
        ("total", total),
        ("system_nodes", system_nodes),
        ("min_job_nodes", min_job_nodes),
        ("jobs_sharing", jobs_sharing),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int((total / (system_nodes / min_job_nodes)) / jobs_sharing)


def eligible(nodes: int, min_job_nodes: int | None, asked: bool) -> bool:
    """Whether a job of ``nodes`` nodes gets a reservation.

    With a minimum job size, jobs of at least that many nodes do; without one,
    only jobs that ask (the ``hwcoll`` shell option).
    """
    if min_job_nodes is None:
        return asked
    return asked or nodes >= min_job_nodes


def fm_job_id(cluster: str, jobid: int) -> str:
    """The reservation's ``jobID`` at the fabric manager: ``<cluster>-<jobid>``, as Slurm
    names its own (so schedulers sharing one fabric manager leave each other's alone)."""
    return f"{cluster}-{jobid}"


def jobid_of(cluster: str, fm_id: str) -> int | None:
    """The Flux jobid of a reservation of ``cluster`` (None: another cluster's, or not a
    plain integer after the prefix)."""
    prefix = f"{cluster}-"
    if not fm_id.startswith(prefix):
        return None
    rest = fm_id[len(prefix) :]
    return natural_or_none(rest)


class Reservation(BaseModel):
    """A job's reservation as the job record keeps it."""

    model_config = ConfigDict(extra="forbid")

    fm_job_id: str
    mcast_limit: int = Field(ge=1)
    token: str = Field(repr=False)
    step: str
    released: bool = False

    def redacted(self) -> dict[str, Any]:
        """The reservation as ``status -j`` shows it: the token hidden."""
        return {**self.model_dump(), "token": REDACTED}


def environment(reservation: Reservation, fm_url: str, min_nodes: int | None) -> dict[str, str]:
    """The job environment libfabric reads for hardware collectives."""
    return {
        "FI_CXI_HWCOLL_MIN_NODES": str(min_nodes or 0),
        "FI_CXI_HWCOLL_ADDRS_PER_JOB": str(reservation.mcast_limit),
        "FI_CXI_COLL_JOB_ID": reservation.fm_job_id,
        "FI_CXI_COLL_MCAST_TOKEN": reservation.token,
        "FI_CXI_COLL_FABRIC_MGR_URL": fm_url.rstrip("/") + MULTICASTS_PATH,
        "FI_CXI_COLL_JOB_STEP_ID": reservation.step,
    }


def links(listing: Mapping[str, Any]) -> list[str]:
    """The reservation ids of a ``GET /fabric/collectives/jobs/`` answer
    (``documentLinks`` of ``/fabric/collectives/jobs/<jobID>``)."""
    prefix = JOBS_PATH + "/"
    out: list[str] = []
    for link in listing.get("documentLinks") or []:
        if isinstance(link, str) and link.startswith(prefix) and len(link) > len(prefix):
            out.append(link[len(prefix) :])
    return out


#: Keys whose values are session tokens wherever they appear (an environment, an answer).
#: The keys whose values are secrets wherever they appear: the fabric manager's session
#: token (in the job's environment and its reservation) and a Workflow's token (in the
#: variables the prolog hands the job, as flux-coral2 passes DW_WORKFLOW_TOKEN)
SECRET_KEYS = frozenset({"FI_CXI_COLL_MCAST_TOKEN", "sessionToken", "DW_WORKFLOW_TOKEN"})


def redact(value: Any) -> Any:
    """``value`` (JSON data) with every session token replaced by :data:`REDACTED`."""
    if isinstance(value, dict):
        return {k: REDACTED if k in SECRET_KEYS else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value

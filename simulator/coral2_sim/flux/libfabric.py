"""What a libfabric application does with hardware collectives, for the simulated jobs.

When a job with a ``hwcoll_environment`` in its KVS starts, its "application"
joins a collective as libfabric's ``fi_join_collective`` does: ``POST`` to
``FI_CXI_COLL_FABRIC_MGR_URL`` with the job's session token, one tree for its
nodes, tagged with its job and step ids. It then aborts without deleting the
tree, as a crashed application would: the pipeline's release at CLEANUP must
delete it.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import httpx

from coral2_sim.flux.job import FluxJob

log = logging.getLogger("coral2_coral2_sim.flux")


def _mac(index: int) -> str:
    value = 0x1A200 + index
    return f"{value >> 16:X}:{(value >> 8) & 0xFF:02X}:{value & 0xFF:02X}"


def join_collective(env: dict[str, Any], nodes: int) -> int | None:
    """Make one multicast tree as libfabric would; its ``mcastID`` (None: refused)."""
    body = {
        "macs": [_mac(i) for i in range(max(nodes, 1))],
        "vni": 1024,
        "timeout": 32000,
        "jobID": env["FI_CXI_COLL_JOB_ID"],
        "jobStepID": env["FI_CXI_COLL_JOB_STEP_ID"],
    }
    headers = {"Authorization": f"Bearer {env['FI_CXI_COLL_MCAST_TOKEN']}"}
    try:
        answer = httpx.post(
            env["FI_CXI_COLL_FABRIC_MGR_URL"], json=body, headers=headers, timeout=5
        )
    except httpx.HTTPError as exc:
        log.info("join_collective: %s (falls back to software collectives)", exc)
        return None
    if answer.status_code not in (200, 201):
        return None
    mcast = answer.json().get("mcastID")
    return mcast if isinstance(mcast, int) else None


def _application(job: FluxJob, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:  # as a shell plugin waits for the job's event
        env = job.kvs.get("hwcoll_environment")
        if isinstance(env, dict):
            join_collective(dict(env), len(job.hosts))
            return
        if any(e.name == "hwcoll" and not (e.context or {}).get("jobID") for e in job.eventlog):
            return  # the event says it has none
        time.sleep(0.05)


def on_start(job: FluxJob, wait_s: float = 2.0) -> None:
    """The job's application starts: join a collective if the job gets the environment."""
    threading.Thread(target=_application, args=(job, wait_s), daemon=True).start()

"""The demo's cases where real DWS makes jobs fail or wait, each shown once before the
batch, on computes no other job uses at that moment:

* another user's persistent storage: the owner makes it, a user's ``persistentdw`` of it
  is refused before any Workflow exists (nnf's words), the owner destroys it;
* a compute behind another rabbit than the rabbitmapping says (recabled): its job is
  refused in Setup naming the compute and both rabbits, before anything is mounted;
* a rabbit slow to bring its storage up: the job waits in Setup, the rabbit named not
  ready in its Servers status, and runs once the storage is up;
* a rabbit whose node daemon is down: the job waits in PreRun on the rabbit's own
  mount, no compute is drained for it, and it runs once the daemon is back.

Each returns what happened, a line per step, and what went wrong (``""``: nothing).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from coral2_sim.demo.batch import DemoJob
from coral2_sim.dws.fixtures import move_compute
from coral2_sim.system import SimulatedSystem
from pipeline.errors import KubeError
from pipeline.model.hostlist import encode_hostlist
from pipeline.states.persistent import NOT_YOURS

#: how long each waiting job is shown waiting (s)
WAIT_S = 3.0
#: how long a case's job may take to end once nothing holds it (s)
END_S = 120.0

Case = Callable[[SimulatedSystem], tuple[list[str], str]]


def _submit(system: SimulatedSystem, dw: str, hosts: list[str], userid: int = 1001) -> int:
    assert system.flux is not None
    attrs: dict[str, Any] = {"dw": dw, "constraints": {"hostlist": [encode_hostlist(hosts)]}}
    resources = DemoJob("case", len(hosts)).resources()
    return system.flux.submit(resources, system=attrs, userid=userid, runtime_s=0.3)


def _ended(system: SimulatedSystem, jobid: int) -> tuple[str, list[str]]:
    """Wait for the job to end; its result and its fatal exceptions' notes."""
    assert system.flux is not None
    if not system.flux.wait_inactive([jobid], END_S):
        return "UNFINISHED", []
    job = system.flux.job(jobid)
    return str(job.result), [str(e["note"]) for e in job.exceptions if e["severity"] == 0]


def _started(system: SimulatedSystem, jobid: int) -> bool:
    assert system.flux is not None
    return bool(system.flux.job(jobid).events("start"))


def persistent_of_another_user(system: SimulatedSystem) -> tuple[list[str], str]:
    """The instance owner makes ``demo-proj``; user 1001's persistentdw is refused."""
    owner, host = os.getuid(), [system.mapping.computes_of(next(iter(system.mapping.rabbits)))[0]]
    create = "#DW create_persistent type=lustre capacity=100GiB name=demo-proj"
    result, notes = _ended(system, _submit(system, create, host, userid=owner))
    if result != "COMPLETED":
        return [], f"create_persistent by the owner ended {result}: {notes}"
    lines = [f"the owner (uid {owner}) made persistent storage demo-proj"]
    result, notes = _ended(system, _submit(system, "#DW persistentdw name=demo-proj", host))
    if result != "FAILED" or not any(NOT_YOURS in n for n in notes):
        return lines, f"user 1001's persistentdw of demo-proj ended {result}: {notes}"
    lines.append(f"user 1001's persistentdw of it refused before any Workflow: {notes[0]}")
    destroy = "#DW destroy_persistent name=demo-proj"
    result, notes = _ended(system, _submit(system, destroy, host, userid=owner))
    if result != "COMPLETED":
        return lines, f"destroy_persistent by the owner ended {result}: {notes}"
    lines.append("the owner destroyed demo-proj")
    return lines, ""


def compute_behind_another_rabbit(system: SimulatedSystem) -> tuple[list[str], str]:
    """A compute recabled to another rabbit than the mapping's: its job is refused."""
    assert system.dws is not None
    first, second = list(system.mapping.rabbits)[:2]
    compute = system.mapping.computes_of(first)[-1]
    move_compute(system.dws, compute, second)
    try:
        result, notes = _ended(
            system, _submit(system, "#DW jobdw type=xfs capacity=10GiB name=moved", [compute])
        )
    finally:
        move_compute(system.dws, compute, first)
    named = [n for n in notes if compute in n and first in n and second in n]
    if result != "FAILED" or not named:
        return [], f"a job on {compute}, recabled to {second}, ended {result}: {notes}"
    return [f"{compute} recabled behind {second}: its job refused in Setup: {named[0]}"], ""


def _waits_then_runs(
    system: SimulatedSystem,
    jobid: int,
    waiting: Callable[[], str],
    release: Callable[[], object],
) -> tuple[str, str]:
    """Show the job waiting (``waiting`` says how, or ``""`` when it does not), release it,
    and see it run; return the waiting line and what went wrong."""
    time.sleep(WAIT_S)
    how = waiting()
    release()
    if not how or _started(system, jobid):
        result, notes = _ended(system, jobid)
        return "", f"the job did not wait (it ended {result}: {notes})"
    result, notes = _ended(system, jobid)
    if result != "COMPLETED":
        return how, f"once released, the job ended {result}: {notes}"
    return how, ""


def _workflow(system: SimulatedSystem, jobid: int) -> dict[str, Any]:
    assert system.dws is not None and system.store is not None
    record = system.store.jobs.get(jobid)
    if record is None or record.workflow is None:
        return {}
    try:
        return system.dws.get_workflow(record.workflow)
    except KubeError:  # gone, or not made yet: not waiting where expected
        return {}


def slow_rabbit_in_setup(system: SimulatedSystem) -> tuple[list[str], str]:
    """A rabbit whose storage does not come up: the job waits in Setup, then runs."""
    assert system.dws is not None
    rabbit = list(system.mapping.rabbits)[1]
    hosts = system.mapping.computes_of(rabbit)[:2]
    system.dws_faults(slow_rabbits=[rabbit])
    jobid = _submit(system, "#DW jobdw type=xfs capacity=10GiB name=slow", hosts)

    def waiting() -> str:
        status = _workflow(system, jobid).get("status") or {}
        if (status.get("state"), status.get("ready")) != ("Setup", False):
            return ""
        assert system.dws is not None
        name = f"{_workflow(system, jobid)['metadata']['name']}-0"
        sets = (system.dws.get("servers", name).get("status") or {}).get("allocationSets")
        pending = sorted(
            r
            for s in sets or []
            for r, entry in (s.get("storage") or {}).items()
            if not entry.get("ready")
        )
        if pending != [rabbit]:
            return ""
        return f"waited in Setup, {rabbit} not ready in its Servers status"

    how, problem = _waits_then_runs(
        system, jobid, waiting, lambda: system.dws_faults(slow_rabbits=[])
    )
    if problem:
        return [how] if how else [], f"a job on slow {rabbit}: {problem}"
    return [f"a job on {rabbit}'s computes {how}, and ran once its storage came up"], ""


def rabbit_daemon_down(system: SimulatedSystem) -> tuple[list[str], str]:
    """A rabbit whose nnf-node-manager is down: a gfs2 job waits on the rabbit's own
    mount in PreRun, no compute is drained for it, and it runs once the daemon is back."""
    assert system.flux is not None
    rabbit = list(system.mapping.rabbits)[2]
    hosts = system.mapping.computes_of(rabbit)[:2]
    system.dws_faults(never_mount=[rabbit])
    jobid = _submit(system, "#DW jobdw type=gfs2 capacity=10GiB name=down", hosts)

    def waiting() -> str:
        status = _workflow(system, jobid).get("status") or {}
        assert system.flux is not None
        with system.flux.lock:
            drained = sorted(system.flux.resources.drained)
        if (status.get("state"), status.get("ready")) != ("PreRun", False) or drained:
            return ""
        return f"waited in PreRun on {rabbit}'s own mount, no node drained"

    how, problem = _waits_then_runs(
        system, jobid, waiting, lambda: system.dws_faults(never_mount=[])
    )
    if problem:
        return [how] if how else [], f"a gfs2 job while {rabbit}'s daemon was down: {problem}"
    return [f"a gfs2 job while {rabbit}'s node daemon was down {how}; it ran once it was back"], ""


CASES: tuple[tuple[str, Case], ...] = (
    ("persistent storage", persistent_of_another_user),
    ("recabled compute", compute_behind_another_rabbit),
    ("slow rabbit", slow_rabbit_in_setup),
    ("rabbit daemon down", rabbit_daemon_down),
)
#: The cases made by a fault injected into the simulated nnf-sos, or by writing a Storage's
#: status, which the real nnf-sos owns and writes back at once: none can be made on the
#: real stack (a Storage disabled by its spec, the real way, is the real-DWS tier's).
INJECTED = {
    "slow rabbit": "it is a fault injected into the simulated nnf-sos",
    "rabbit daemon down": "it is a fault injected into the simulated nnf-sos",
    "recabled compute": "it writes a Storage's status, which the real nnf-sos writes back",
}


def dws_cases(system: SimulatedSystem) -> tuple[list[str], list[str]]:
    """Run every case; what happened (``case: line``) and what went wrong."""
    lines: list[str] = []
    problems: list[str] = []
    for name, case in CASES:
        if system.dws_stack == "real" and name in INJECTED:
            lines.append(f"{name}: not run on the real DWS: {INJECTED[name]}")
            continue
        said, problem = case(system)
        lines += [f"{name}: {line}" for line in said]
        problems += [f"{name}: {problem}"] if problem else []
    return lines, problems

"""The DWS scenarios recorded from the real DWS and nnf-sos and replayed against the
simulated ones: each plays jobs through the simulated Flux and the pipeline and gives, for
each job, what the pipeline saw of its Workflow (every distinct desiredState, state,
status and message, in the order the watch delivered them) and how Flux ended it (result,
exceptions in their words, events).

A job id, a Workflow's name and the timestamps differ from run to run and are written as
``JOB``; nothing else is changed: a difference in words is a difference."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from coral2_sim.system import SimulatedSystem

from pipeline.clients.k8s import DwsClient
from pipeline.errors import KubeError
from tests.e2e.conftest import event_names, nodes

#: The longest a scenario's job may take on the real stack (its managers reconcile at
#: their own pace) or on a loaded machine.
JOB_TIMEOUT_S = 240


@dataclass(frozen=True)
class Scenario:
    """``play`` submits the scenario's jobs and waits for each to end; it returns their
    ids in the order the recording lists them."""

    name: str
    what: str
    play: Callable[[SimulatedSystem], list[int]]


class Watcher:
    """Every version of every Workflow the API server sends, in order, by name: listed
    before the scenario submits anything, then watched from that list's version, so no
    version a scenario's Workflow goes through is missed."""

    def __init__(self, system: SimulatedSystem) -> None:
        assert system.kube is not None
        self.client = DwsClient(system.kube.api())
        self.seen: dict[str, list[dict[str, Any]]] = {}
        self.deleted: set[str] = set()
        self.lock = threading.Condition()
        self.stop = threading.Event()
        items, self.rv = self.client.list_objects("workflows")
        for item in items:
            self._on_event(item)
        self.thread = threading.Thread(target=self._run, name="workflow-trace", daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                for event in self.client.watch("workflows", self.rv, timeout_s=1):
                    self.rv = event.resource_version
                    self._on_event(event.object, deleted=event.type == "DELETED")
            except KubeError:  # the stream broke: resume where it was
                time.sleep(0.1)

    def _on_event(self, obj: dict[str, Any], *, deleted: bool = False) -> None:
        name = obj["metadata"]["name"]
        with self.lock:
            self.seen.setdefault(name, []).append(obj)
            if deleted:
                self.deleted.add(name)
                self.lock.notify_all()

    def versions(self, name: str) -> list[dict[str, Any]]:
        """Every version of ``name`` up to its deletion (a Workflow made is deleted once
        its job ends: the trace waits for the watch to deliver that far)."""
        with self.lock:
            if name in self.seen:
                assert self.lock.wait_for(lambda: name in self.deleted, JOB_TIMEOUT_S), (
                    f"the watch never delivered {name}'s deletion"
                )
            return list(self.seen.get(name, []))


@contextmanager
def watching(system: SimulatedSystem) -> Iterator[Watcher]:
    watcher = Watcher(system)
    watcher.thread.start()
    try:
        yield watcher
    finally:
        watcher.stop.set()
        watcher.thread.join(5)
        watcher.client.close()


def normalized(text: str, jobid: int) -> str:
    return re.sub(rf"\b{jobid}\b", "JOB", text)


def workflow_steps(versions: list[dict[str, Any]], jobid: int) -> list[list[str]]:
    """Each distinct ``[desiredState, state, status, message]`` in the order seen."""
    steps: list[list[str]] = []
    for obj in versions:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        step = [
            str(spec.get("desiredState", "")),
            str(status.get("state", "")),
            str(status.get("status", "")),
            normalized(str(status.get("message", "")), jobid),
        ]
        if not steps or steps[-1] != step:
            steps.append(step)
    return steps


def trace(system: SimulatedSystem, watcher: Watcher, jobid: int) -> dict[str, Any]:
    assert system.flux is not None
    job = system.flux.job(jobid)
    return {
        "result": job.result,
        "exceptions": [
            {
                "type": e["type"],
                "severity": e["severity"],
                "note": normalized(str(e.get("note", "")), jobid),
            }
            for e in job.exceptions
        ],
        "events": event_names(job),
        "workflow": workflow_steps(watcher.versions(f"fluxjob-{jobid}"), jobid),
    }


def submit(system: SimulatedSystem, dw: str, n: int) -> int:
    """Submitted as the instance's owner (the pipeline's own uid): only the owner may
    ``create_persistent``; nothing else here depends on who submits."""
    assert system.flux is not None
    return system.flux.submit(nodes(n), system={"dw": dw}, userid=os.getuid())


def ended(system: SimulatedSystem, jobid: int) -> int:
    """Wait until the job is inactive and its Workflow gone (or never made)."""
    assert system.flux is not None and system.dws is not None
    assert system.flux.wait_inactive([jobid], JOB_TIMEOUT_S), system.flux.job(jobid).eventlog
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while any(w["metadata"]["name"] == f"fluxjob-{jobid}" for w in workflows(system)):
        assert time.monotonic() < deadline, f"fluxjob-{jobid} outlived its job"
        time.sleep(0.1)
    return jobid


def workflows(system: SimulatedSystem) -> list[dict[str, Any]]:
    assert system.dws is not None
    items, _ = system.dws.list_objects("workflows")
    return items


def one(dw: str, n: int = 2) -> Callable[[SimulatedSystem], list[int]]:
    return lambda system: [ended(system, submit(system, dw, n))]


def in_turn(*jobs: tuple[str, int]) -> Callable[[SimulatedSystem], list[int]]:
    """Jobs ``(directives, nodes)`` one after the other, each ended before the next."""
    return lambda system: [ended(system, submit(system, dw, n)) for dw, n in jobs]


def cancelled_before_it_runs(system: SimulatedSystem) -> list[int]:
    """Cancelled once its Workflow has finished Proposal, under the job manager's lock
    taken when the Workflow was made, so that the resource-update releasing its
    dependency cannot come in between: the same moment on any stack, however fast its
    Proposal."""
    flux, dws = system.flux, system.dws
    assert flux is not None and dws is not None
    jobid = submit(system, "#DW jobdw type=xfs capacity=8GiB name=scratch", 2)
    with flux.changed:
        assert flux.changed.wait_for(
            lambda: flux.job(jobid).memo.get("rabbit_workflow"), JOB_TIMEOUT_S
        )
        deadline = time.monotonic() + JOB_TIMEOUT_S
        while (dws.get_workflow(f"fluxjob-{jobid}").get("status") or {}).get("status") != (
            "Completed"
        ):
            assert time.monotonic() < deadline, f"fluxjob-{jobid} never finished Proposal"
            time.sleep(0.05)
        flux.cancel(jobid)
    return [ended(system, jobid)]


SCENARIOS = [
    Scenario(
        "xfs",
        "an xfs file system on two computes",
        one("#DW jobdw type=xfs capacity=32GiB name=scratch"),
    ),
    Scenario(
        "gfs2",
        "a gfs2 file system on two computes",
        one("#DW jobdw type=gfs2 capacity=32GiB name=shared"),
    ),
    Scenario(
        "raw",
        "a raw block device on two computes",
        one("#DW jobdw type=raw capacity=32GiB name=blk"),
    ),
    Scenario(
        "lustre",
        "a lustre file system on two computes",
        one("#DW jobdw type=lustre capacity=100GiB name=lus"),
    ),
    Scenario(
        "two-file-systems",
        "an xfs and a gfs2 in one job",
        one("#DW jobdw type=xfs capacity=8GiB name=one #DW jobdw type=gfs2 capacity=8GiB name=two"),
    ),
    Scenario(
        "invalid-directive",
        "a type DWS's ruleset does not know",
        one("#DW jobdw type=zfs capacity=1GiB name=bad", 1),
    ),
    Scenario(
        "above-policy-maximum",
        "more capacity than the site's policy allows",
        one("#DW jobdw type=xfs capacity=4TiB name=huge", 1),
    ),
    Scenario(
        "unknown-profile",
        "a profile= naming no storage profile",
        one("#DW jobdw type=xfs capacity=8GiB name=scratch profile=nosuch", 1),
    ),
    Scenario(
        "cancelled-before-it-runs",
        "a job cancelled once its Workflow exists",
        cancelled_before_it_runs,
    ),
    Scenario(
        "persistent-lustre",
        "a lustre instance created, used by two computes, destroyed",
        in_turn(
            ("#DW create_persistent type=lustre capacity=100GiB name=proj", 1),
            ("#DW persistentdw name=proj", 2),
            ("#DW destroy_persistent name=proj", 1),
        ),
    ),
    Scenario(
        "persistent-xfs",
        "an xfs instance made by one compute, used by it, destroyed",
        in_turn(
            ("#DW create_persistent type=xfs capacity=10GiB name=local", 1),
            ("#DW persistentdw name=local", 1),
            ("#DW destroy_persistent name=local", 1),
        ),
    ),
    Scenario(
        "persistent-xfs-too-many-computes",
        "an xfs instance of one compute's allocation named by a job of two computes",
        in_turn(
            ("#DW create_persistent type=xfs capacity=10GiB name=local", 1),
            ("#DW persistentdw name=local", 2),
            ("#DW destroy_persistent name=local", 1),
        ),
    ),
]


#: Events of a prolog that runs beside the DWS side's, at its own pace.
CONCURRENT_EVENTS = frozenset({"cray-slingshot"})


def compared(job: dict[str, Any]) -> dict[str, Any]:
    """What a replay compares of a job's trace; the rest is the stacks' own pace:

    * the events as a sorted list: the order of events that concurrent prologs post
      (``cray-slingshot``, ``memo``) is whichever finished first; and without the
      ``cray-slingshot`` prolog's own event, which a job refused in ``dws.setup`` posts
      or not as that prolog, running beside it, got there first;
    * the Workflow's steps with the message of a ``DriverWait`` left out: which progress
      message nnf's drivers post while they wait (``allocation``, ``allocation set not
      ready``, ``delete``, or a mount attempt that failed and is retried) depends on
      how far the reconciler got before its requeue; the pipeline only waits on them;
    * a ``TransientCondition`` that cleared, its state then Completed: whether nnf meets
      one (a Lustre file system's NnfLustreMGT looked up before it was made, "no
      NnfLustreMGT resource found for MGS address") depends on its reconcilers' order;
      the pipeline waits through it (``tc_timeout``). One that lasts is compared.
    """
    steps: list[list[str]] = []
    workflow = job["workflow"]
    for at, (desired, state, status, message) in enumerate(workflow):
        if status == "TransientCondition" and any(
            later[1] == state and later[2] == "Completed" for later in workflow[at + 1 :]
        ):
            continue  # cleared within its state: the reconciler's pace (see above)
        step = [desired, state, status, "" if status == "DriverWait" else message]
        if not steps or steps[-1] != step:
            steps.append(step)
    events = sorted(e for e in job["events"] if e not in CONCURRENT_EVENTS)
    return {**job, "events": events, "workflow": steps}


def play(system: SimulatedSystem, scenario: Scenario) -> list[dict[str, Any]]:
    """Play ``scenario`` on ``system``: one trace per job."""
    with watching(system) as watcher:
        jobs = scenario.play(system)
        return [trace(system, watcher, jobid) for jobid in jobs]

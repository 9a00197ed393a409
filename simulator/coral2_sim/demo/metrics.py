"""What the lifecycle demo measures: transition latency, and what a run left behind."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

from kubernetes.client import ApiClient

from coral2_sim.system import SimulatedSystem
from pipeline.clients.k8s import NNF_GROUP, NNF_VERSIONS, DwsClient
from pipeline.platform.node_results import ask

STATES = ("Proposal", "Setup", "DataIn", "PreRun", "PostRun", "DataOut", "Teardown")
#: States after which the pipeline itself asks for the next one (or deletes, after Teardown);
#: Proposal waits for Flux to schedule the job and PreRun for the job to run.
PIPELINE_DRIVEN = ("Setup", "DataIn", "PostRun", "DataOut", "Teardown")


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


class TransitionClock:
    """Watches Workflows: from the event where DWS shows a state ready to the event carrying
    our next desiredState patch (or our delete, after Teardown), per state, in ms."""

    def __init__(self, api: ApiClient) -> None:
        self.dws = DwsClient(api)
        self.ready_at: dict[tuple[str, str], float] = {}
        self.samples: dict[str, list[float]] = defaultdict(list)
        #: (monotonic time of our patch, ms, the state it moved out of)
        self.timeline: list[tuple[float, float, str]] = []
        self._done: set[tuple[str, str]] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="transition-clock", daemon=True)

    def start(self) -> TransitionClock:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=3)
        self.dws.close()

    def _record(self, name: str, state: str, now: float) -> None:
        key = (name, state)
        if key in self.ready_at and key not in self._done and state in PIPELINE_DRIVEN:
            self._done.add(key)
            self.samples[state].append((now - self.ready_at[key]) * 1000)
            self.timeline.append((now, self.samples[state][-1], state))

    def observe(self, obj: dict[str, Any], now: float) -> None:
        """Account for one Workflow as seen at ``now``."""
        name = obj["metadata"]["name"]
        status, desired = obj.get("status") or {}, (obj.get("spec") or {}).get("desiredState")
        state = status.get("state")
        if state and status.get("ready") and state == desired:
            self.ready_at.setdefault((name, state), now)
        if desired in STATES and desired != "Proposal":
            self._record(name, STATES[STATES.index(desired) - 1], now)
        if obj["metadata"].get("deletionTimestamp"):
            self._record(name, "Teardown", now)

    def _run(self) -> None:
        self.dws.follow("workflows", lambda _, obj: self.observe(obj, time.monotonic()), self._stop)

    def all_samples(self) -> list[float]:
        return [x for values in self.samples.values() for x in values]


def leaks(system: SimulatedSystem) -> list[str]:
    """What the run left behind: empty when clean."""
    assert system.dws is not None and system.store is not None
    found: list[str] = []
    for plural in ("workflows", "servers", "computes", "directivebreakdowns"):
        items, _ = system.dws.list_objects(plural)
        found += [f"{plural} {i['metadata']['name']}" for i in items]
    movements: Any = system.dws.custom.list_cluster_custom_object(
        NNF_GROUP, NNF_VERSIONS[0], "nnfdatamovements"
    )
    found += [f"nnfdatamovement {m['metadata']['name']}" for m in movements.get("items", [])]
    mounts, _ = system.dws.list_objects("clientmounts", all_namespaces=True)
    found += [f"clientmount {m['metadata']['namespace']}/{m['metadata']['name']}" for m in mounts]
    client, keys = system.store.client, system.store.keys
    found += [f"lock {k.decode()}" for k in client.scan_iter(f"{keys.prefix}:lock:*")]
    found += [f"deadline {d.member}" for d in system.store.deadlines.pending()]
    for jobid in system.store.jobs.jobids():
        record = system.store.jobs.get(jobid)
        where = (
            ""
            if record is None
            else (
                f" ({record.state or 'never observed'}, teardown {record.teardown.value},"
                f" epilog {record.epilog.value})"
            )
        )
        found.append(f"job {jobid} still tracked{where}")
    pool = system.store.vnipool.query()
    found += [f"VNIs {vnis} still reserved by job {job}" for job, vnis in pool["jobs"].items()]
    found += [
        f"VNIs {entry['vnis']} of job {job} still in quarantine, waiting on {entry['waiting']}"
        for job, entry in pool["quarantine"].items()
    ]
    backlog = system.store.outbox.backlog()
    if backlog:
        found.append(f"outbox backlog {backlog}")
    unsettled = system.store.ledger.pending()
    if unsettled:
        names = ", ".join(
            f"{e.name} {e.kwargs.get('jobid', '')} sent {time.time() - e.first_sent:.0f} s ago"
            for e in system.store.ledger.unsettled(5)
        )
        found.append(f"{unsettled} sent tasks without an outcome (ledger): {names}")
    if system.flux is not None:
        with system.flux.lock:
            found += [
                f"flux job {j.id} still {j.state} after "
                + ", ".join(e.name for e in j.eventlog[-4:])
                for j in system.flux.jobs.values()
                if j.state != "INACTIVE"
            ]
            res = system.flux.resources
            busy = set(system.mapping.computes) - res.free
            if busy:
                found.append(f"nodes still allocated: {sorted(busy)}")
            for rabbit, entry in system.mapping.rabbits.items():
                if res.ssd_free[rabbit] != entry.capacity // 2**30:
                    found.append(f"ssd still allocated on {rabbit}")
    if system.fabric is not None:
        found += [f"fabric manager reservation {j}" for j in system.fabric.reservations()]
        if trees := system.fabric.tree_count():
            found.append(f"{trees} multicast trees at the fabric manager")
    return found + cxi_leaks(system)


#: The VNIs of every NIC's default service (id 1), which no job owns.
DEFAULT_SERVICE_VNIS = {1, 10}


def cxi_leaks(system: SimulatedSystem) -> list[str]:
    """Job CXI services left on the simulated NICs (each node's worker answers
    ``node.cxi_list``): any but system services and the default service's."""
    if not (system.slingshot and system.node_workers) or system.app is None:
        return []
    prefix = "node."
    asked = {
        host: ask(system.app, "node.cxi_list", host, prefix + host, args=[host])
        for host in system.mapping.computes
    }
    found = []
    for host, result in asked.items():
        for device in result.get(timeout=30):
            found += [
                f"CXI service {s['id']} of VNIs {s['vnis']} left on {host} {device['name']}"
                for s in device["services"]
                if not s["system"] and set(s["vnis"]) - DEFAULT_SERVICE_VNIS
            ]
    return found

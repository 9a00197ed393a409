"""One job's node prolog fanned out to 100, 1,000, 4,000 and 11,136 simulated nodes: from
the job entering RUN to the job released, with the pipeline's part timed apart from the
nodes', its CPU per node, broker messages per node, Kubernetes requests from nodes.

The whole simulated system runs, signing on: the simulated job manager reports the job
through the events journal, the pipeline reserves its VNI and sends ``node.prolog`` to
every node's queue, and the job manager's prolog waits on the verdict. The nodes are
served by a light emulator (``coral2_sim.node.emulator``: the node worker's own tasks,
signature checks and signed answers, one queue per node without kombu's multi-queue
fetch) that holds every answer until all its nodes have worked: on a machine the nodes
work at once, on their own cores, while here they share the benchmark's two. So:

* ``send``: RUN (``alloc``) → every node's message in its queue (the pipeline);
* ``nodes``: the emulated nodes' work, one after the other (the simulation);
* ``count``: the answers handed over → the job released (the pipeline);
* ``pipeline``: ``send`` + ``count``, what a machine whose nodes answer at once sees;
* ``epilog``: the same for CLEANUP (``finish``) → the job's VNIs out of quarantine
  (its send and its count apart),
  every node's services destroyed and confirmed;
* the pipeline's CPU per node, over the job's whole node work (prolog and epilog).

The job runs twice; the second is measured (the first warms the worker up).

``python -m benchmarks.fanout [--nodes 100,1000,4000,11136] [--workers N]``
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import redis
from coral2_sim.clock import cache_dir
from coral2_sim.kube.sim_paths import REQUESTS_PATH
from coral2_sim.node.agent import USER_AGENT as CLIENTMOUNT_DAEMON
from coral2_sim.procstat import cpu_seconds
from coral2_sim.system import SimulatedSystem

from benchmarks.elcap import system as elcap_system
from pipeline.model.rabbitmap import RabbitMapping

TASK = {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
OURS = {"coral2-pipeline", CLIENTMOUNT_DAEMON}
#: The processes of the pipeline's side of a fan-out.
PIPELINE = ("worker", "watcher")


def _pushes(client: redis.Redis) -> int:
    stats: dict[str, Any] = client.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{c}", {}).get("calls", 0)) for c in ("lpush", "rpush"))


def _pids(sim: SimulatedSystem) -> dict[str, int]:
    return {
        name: pid
        for name, pid in sim.procs.pids().items()
        if name.split("-")[0] in PIPELINE  # worker, worker-2, … and the watcher
    }


def _run_job(sim: SimulatedSystem, nodes: int) -> Any:
    """Run one job on ``nodes`` nodes to its end; return it."""
    assert sim.flux is not None
    jobid = sim.flux.submit([{"type": "node", "count": nodes, "with": [TASK]}], runtime_s=0.0)
    if not sim.flux.wait_inactive([jobid], 1800):
        raise RuntimeError(f"the {nodes}-node job did not finish in 1,800 s")
    job = sim.flux.job(jobid)
    if job.result != "COMPLETED":
        raise RuntimeError(f"the {nodes}-node job ended {job.result}: {job.exceptions}")
    return job


def _settle(
    sim: SimulatedSystem, prolog: dict[str, float], jobid: int
) -> tuple[dict[str, float], float]:
    """Wait until every node task sent is answered (the job's epilogs) and the job's VNIs
    are out of quarantine; return the emulator's times of the epilog round and when the
    pipeline confirmed the last node clean, as the job's timeline has it (the end of its
    ``job.epilogs_complete``: this process, which hosts the simulated Flux, may see the
    quarantine empty only later). The next job's messages then reach the emulator alone."""
    assert sim.store is not None
    deadline = time.monotonic() + 1800
    epilog = prolog
    while epilog == prolog or sim.store.vnipool.query()["quarantine"]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"still in quarantine: {sim.store.vnipool.query()['quarantine']}")
        time.sleep(0.01)
        epilog = json.loads(sim.emulator_times(0).read_text())
    # the run's outcome is written once its actions (the quarantine's release among them)
    # are done: the quarantine may be seen empty a moment before it
    while not (done := _epilogs_completed(sim, jobid)):
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {jobid}'s timeline shows no job.epilogs_complete done")
        time.sleep(0.01)
    freed = max(done)
    while sim.store.ledger.unsettled(1):
        if time.monotonic() > deadline:
            raise RuntimeError(f"node tasks still unanswered: {sim.store.ledger.unsettled(3)}")
        time.sleep(0.05)
    return epilog, freed


def _epilogs_completed(sim: SimulatedSystem, jobid: int) -> list[float]:
    """When each run of the job's ``job.epilogs_complete`` was done, as its timeline says."""
    assert sim.store is not None
    return [
        entry.at
        for entry in sim.store.timeline.read(jobid)
        if entry.what.startswith("job.epilogs_complete run") and entry.what.endswith(": done")
    ]


def bench_fanout(nodes: int, workers: int = 1) -> dict[str, float]:
    """The phases' seconds, the pipeline's CPU ms per node, broker pushes per node, API
    requests from nodes."""
    _, raw = elcap_system(-(-nodes // 16) * 16)  # whole rabbits of 16 computes
    mapping = RabbitMapping.model_validate(raw)
    with SimulatedSystem(
        mapping,
        observe_only=False,
        with_flux=True,
        node_workers=True,
        node_emulators=1,
        emulator_hold=nodes,
        slingshot=True,
        signing=True,
        key_cache=cache_dir(),
        # the emulator works its nodes one after the other, minutes at a whole machine,
        # where a machine's nodes answer at once: no resends of messages it has not
        # reached yet, which would measure the ledger's recovery rather than the pipeline
        extra_env={
            "CORAL2_PIPELINE_PIPELINE__RESEND_AFTER": "3600",
            "CORAL2_PIPELINE_PIPELINE__RESEND_CAP": "3600",
        },
        latency_s=0.0,
        workers=workers,
    ) as sim:
        assert sim.flux is not None and sim.kube is not None and sim.redis_url
        client = redis.Redis.from_url(sim.redis_url)
        pids = _pids(sim)
        for _ in range(2):  # the first warms the worker up (imports, connections, caches)
            cpu_before = cpu_seconds(pids)
            before = _pushes(client)
            job = _run_job(sim, nodes)
            emulator = json.loads(sim.emulator_times(0).read_text())
            pushes = _pushes(client) - before
            # its epilogs answered: the CPU figure covers the whole node work
            epilog, freed = _settle(sim, emulator, job.id)
            cpu_after = cpu_seconds(pids)
        times = {
            e.name + str((e.context or {}).get("description", "")): e.timestamp
            for e in job.eventlog
        }
        alloc, released = times["alloc"], times["prolog-finishjob-manager.prolog"]
        cleanup = times["finish"]
        assert sim.kube is not None
        agents: dict[str, int] = sim.kube.sim(REQUESTS_PATH)
        from_nodes = sum(n for agent, n in agents.items() if agent not in OURS)
        client.close()
    cpu = sum(cpu_after[name] - cpu_before[name] for name in pids)
    send, count = emulator["sent"] - alloc, released - emulator["answered"]
    return {
        "wall": released - alloc,
        "send": send,
        "nodes": emulator["answered"] - emulator["sent"],
        "count": count,
        "pipeline": send + count,
        "epilog": (epilog["sent"] - cleanup) + (freed - epilog["answered"]),
        "epilog_send": epilog["sent"] - cleanup,
        "epilog_count": freed - epilog["answered"],
        "cpu_ms_per_node": cpu * 1000 / nodes,
        "pushes_per_node": pushes / nodes,
        "from_nodes": from_nodes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fanout")
    parser.add_argument("--nodes", default="100,1000,4000,11136")
    parser.add_argument(
        "--workers", type=int, default=1, help="lifecycle worker processes (each sends a chunk)"
    )
    args = parser.parse_args()
    for nodes in (int(n) for n in args.nodes.split(",")):
        started = time.monotonic()
        result = bench_fanout(nodes, args.workers)
        print(
            f"{nodes:>5} nodes, {args.workers} worker process(es): pipeline "
            f"{result['pipeline']:.2f} s (send "
            f"{result['send']:.2f} s + count {result['count']:.2f} s), "
            f"{result['cpu_ms_per_node']:.2f} ms CPU per node; emulated nodes "
            f"{result['nodes']:.2f} s; RUN → released {result['wall']:.2f} s; epilog "
            f"(CLEANUP → VNIs out of quarantine, the pipeline's part) {result['epilog']:.2f} s "
            f"(send {result['epilog_send']:.2f} s + count {result['epilog_count']:.2f} s); "
            f"{result['pushes_per_node']:.1f} broker pushes per node, "
            f"{result['from_nodes']} API requests from nodes "
            f"(whole run {time.monotonic() - started:.0f} s)"
        )


if __name__ == "__main__":
    main()

"""One job's node prolog fanned out to 100, 1,000 and 4,000 simulated nodes: from the job
entering RUN to the job released, broker messages per node, Kubernetes requests from nodes.

The whole simulated system runs, signing on: the simulated job manager reports the job
through the events journal, the pipeline reserves its VNI and sends ``node.prolog`` to
every node's queue, one node worker process serves every node (simulated Cassini NICs,
simulated clientmount service), and the job manager's prolog waits on the verdict.

``python -m benchmarks.fanout [--nodes 100,1000,4000]``
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import redis

from benchmarks.elcap import system as elcap_system
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.sim.kube.api import REQUESTS_PATH
from pipeline.sim.node.agent import USER_AGENT as CLIENTMOUNT_DAEMON
from pipeline.sim.system import SimulatedSystem

TASK = {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
OURS = {"coral2-pipeline", CLIENTMOUNT_DAEMON}


def _pushes(client: redis.Redis) -> int:
    stats: dict[str, Any] = client.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{c}", {}).get("calls", 0)) for c in ("lpush", "rpush"))


def bench_fanout(nodes: int) -> dict[str, float]:
    """Seconds from RUN to released, broker pushes per node, API requests from nodes."""
    _, raw = elcap_system(-(-nodes // 16) * 16)  # whole rabbits of 16 computes
    mapping = RabbitMapping.model_validate(raw)
    with SimulatedSystem(
        mapping,
        observe_only=False,
        with_flux=True,
        node_workers=True,
        slingshot=True,
        signing=True,
        latency_s=0.0,
    ) as sim:
        assert sim.flux is not None and sim.kube is not None and sim.redis_url
        client = redis.Redis.from_url(sim.redis_url)
        before = _pushes(client)
        jobid = sim.flux.submit([{"type": "node", "count": nodes, "with": [TASK]}], runtime_s=0.0)
        if not sim.flux.wait_inactive([jobid], 600):
            raise RuntimeError(f"the {nodes}-node job did not finish in 600 s")
        job = sim.flux.job(jobid)
        if job.result != "COMPLETED":
            raise RuntimeError(f"the {nodes}-node job ended {job.result}: {job.exceptions}")
        times = {
            e.name + str((e.context or {}).get("description", "")): e.timestamp
            for e in job.eventlog
        }
        released = times["prolog-finishjob-manager.prolog"] - times["alloc"]
        pushes = _pushes(client) - before
        assert sim.kube is not None
        agents: dict[str, int] = sim.kube.sim(REQUESTS_PATH)
        from_nodes = sum(n for agent, n in agents.items() if agent not in OURS)
        client.close()
    return {"seconds": released, "pushes_per_node": pushes / nodes, "from_nodes": from_nodes}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fanout")
    parser.add_argument("--nodes", default="100,1000,4000")
    args = parser.parse_args()
    for nodes in (int(n) for n in args.nodes.split(",")):
        started = time.monotonic()
        result = bench_fanout(nodes)
        print(
            f"{nodes:>5} nodes: RUN → released {result['seconds']:.2f} s, "
            f"{result['pushes_per_node']:.1f} broker pushes per node, "
            f"{result['from_nodes']} API requests from nodes "
            f"(whole run {time.monotonic() - started:.0f} s)"
        )


if __name__ == "__main__":
    main()

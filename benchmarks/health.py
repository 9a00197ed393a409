"""Resource health at El Capitan's size.

* Replay of a 1,000,000-event resource eventlog (random drains with every
  overwrite, undrains, online and offline over 11,136 nodes), read as the
  RFC 18 text Flux keeps it, one line at a time: seconds and peak memory.
* A storm of 696 rabbits flapping (Ready ↔ Offline, a compute losing PCIe on
  the way down), each Storage event delivered twice (watch and resync), told
  through Redis as the workers tell it: outbox entries per event against the
  fewest that say what changed, and against what coral2_dws sends.

``python -m benchmarks.health [--events 1000000] [--rabbits 696] [--flaps 5]``
"""

from __future__ import annotations

import argparse
import io
import json
import random
import time
import tracemalloc
from typing import Any

import redis

from benchmarks.servers import redis_server
from pipeline.model.hostlist import encode_hostlist
from pipeline.model.resource_events import drained, events_of
from pipeline.states.rabbits import RabbitPolicy, decide
from pipeline.store import Keys, Store

NODES = 11_136
RABBITS = 696
CHUNKS = 36
HOSTS = [f"elcap{i}" for i in range(1, NODES + 1)]
NODELIST = encode_hostlist(HOSTS)


def eventlog_text(events: int, seed: int = 1) -> str:
    """An RFC 18 eventlog of ``events`` random resource events over El Capitan's nodes."""
    rng = random.Random(seed)
    out = io.StringIO()
    head = {"ranks": f"0-{NODES - 1}", "online": "", "nodelist": NODELIST}
    out.write(json.dumps({"timestamp": 0.0, "name": "restart", "context": head}) + "\n")
    for i in range(1, events):
        lo = rng.randrange(NODES)
        hi = min(NODES - 1, lo + rng.choice((0, 0, 0, 3, 15)))
        idset = str(lo) if lo == hi else f"{lo}-{hi}"
        kind = rng.choice(("drain", "drain", "undrain", "online", "offline"))
        context: dict[str, Any] = {"idset": idset}
        if kind in ("drain", "undrain"):
            context["nodelist"] = encode_hostlist(HOSTS[lo : hi + 1])
        if kind == "drain":
            context["overwrite"] = rng.choice((0, 1, 2))
            context["reason"] = rng.choice(("rabbit lost PCIe connection", "bad dimm", "epilog"))
        out.write(json.dumps({"timestamp": float(i), "name": kind, "context": context}) + "\n")
    return out.getvalue()


def bench_replay(events: int = 1_000_000) -> dict[str, float]:
    """Seconds and peak MiB of replaying ``events`` events line by line."""
    text = eventlog_text(events).encode()
    started = time.perf_counter()
    result = drained(events_of(io.BytesIO(text)), NODELIST)
    seconds = time.perf_counter() - started
    tracemalloc.start()
    drained(events_of(io.BytesIO(text)), NODELIST)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "events": events,
        "seconds": seconds,
        "peak_mib": peak / 2**20,
        "drained": len(result),
        "text_mib": len(text) / 2**20,
    }


def bench_storm(rabbits: int = RABBITS, flaps: int = 5, seed: int = 1) -> dict[str, float]:
    """Outbox entries per Storage event in a flapping storm, against the fewest possible."""
    rng = random.Random(seed)
    computes = {r: HOSTS[r * 16 : r * 16 + 16] for r in range(rabbits)}
    paths = {r: [f"/elcap/chassis{r}/ssd{i}" for i in range(CHUNKS)] for r in range(rabbits)}
    policy = RabbitPolicy()
    with redis_server() as url:
        store = Store(redis.Redis.from_url(url), Keys("bench"))
        events = sent = fewest = upstream = 0
        started = time.perf_counter()
        for flap in range(flaps * 2):
            ready = flap % 2 == 1  # down, up, down, up …
            for r in rng.sample(range(rabbits), rabbits):
                lost = set() if ready else {rng.choice(computes[r])}
                status = "Ready" if ready else "Offline"
                for _ in range(2):  # the watch's event and the resync's pass
                    before = store.outbox.backlog()
                    store.told.change(
                        str(r),
                        lambda told, r=r, lost=lost, status=status: decide(
                            status, lost, computes[r], paths[r], policy, told, "1"
                        ),
                    )
                    sent += store.outbox.backlog() - before
                    events += 1
                    # coral2_dws: a drain when a compute is offline, a bulk property RPC,
                    # and every ssd's status, on every event
                    upstream += (1 if lost else 0) + 1 + CHUNKS
                # the fewest entries that say what changed: the ssds once per flap, the
                # drain once per newly lost compute
                fewest += CHUNKS + (1 if lost else 0)
        seconds = time.perf_counter() - started
    return {
        "events": events,
        "per_event": sent / events,
        "fewest_per_event": fewest / events,
        "upstream_per_event": upstream / events,
        "events_per_s": events / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rabbits", type=int, default=RABBITS)
    parser.add_argument("--flaps", type=int, default=5)
    args = parser.parse_args()
    r = bench_replay(args.events)
    print(
        f"replay of {r['events']:,} events ({r['text_mib']:.0f} MiB of eventlog): "
        f"{r['seconds']:.2f} s, {r['peak_mib']:.1f} MiB peak, {r['drained']:,} drained"
    )
    s = bench_storm(args.rabbits, args.flaps)
    print(
        f"storm of {args.rabbits} rabbits flapping, {s['events']:,} Storage events: "
        f"{s['per_event']:.2f} outbox entries per event (fewest {s['fewest_per_event']:.2f}, "
        f"coral2_dws {s['upstream_per_event']:.2f}), {s['events_per_s']:.0f} events/s"
    )


if __name__ == "__main__":
    main()

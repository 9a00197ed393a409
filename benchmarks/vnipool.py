"""The VNI pool: reserve+release pairs per second with concurrent clients, against a raw
``EVALSHA`` no-op on the same Redis (the ceiling of one script round trip).

``python -m benchmarks.vnipool [--clients 8] [--seconds 3]``
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable

import redis

from benchmarks.servers import redis_server
from pipeline.store import Keys
from pipeline.store.vnipool import VniPool


def _rate(clients: int, seconds: float, work: Callable[[int, int], None]) -> float:
    """Calls of ``work(client, n)`` per second, ``clients`` threads for ``seconds``."""
    counts = [0] * clients
    stop = time.monotonic() + seconds
    start = threading.Barrier(clients + 1)

    def loop(client: int) -> None:
        start.wait()
        n = 0
        while time.monotonic() < stop:
            work(client, n)
            n += 1
        counts[client] = n

    threads = [threading.Thread(target=loop, args=(c,)) for c in range(clients)]
    for thread in threads:
        thread.start()
    began = time.monotonic()
    start.wait()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.monotonic() - began)


def bench_vnipool(clients: int = 8, seconds: float = 3.0) -> dict[str, float]:
    """Pairs/s of reserve(2)+release, and no-op EVALSHA pairs/s, on one redis-server."""
    with redis_server() as url:
        client = redis.Redis.from_url(url, max_connections=clients + 2)
        pool = VniPool(client, Keys("bench"))
        pool.configure("1024-65535")
        noop = client.register_script("return 1")

        def pair(worker: int, n: int) -> None:
            jobid = worker * 10_000_000 + n
            pool.reserve(jobid, 2)
            pool.release(jobid)

        def raw(worker: int, n: int) -> None:
            noop()
            noop()

        _rate(clients, 0.5, raw)  # warm up connections and scripts
        raw_pairs = _rate(clients, seconds, raw)
        pairs = _rate(clients, seconds, pair)
        client.close()
    return {"pairs_per_s": pairs, "raw_pairs_per_s": raw_pairs, "ratio": pairs / raw_pairs}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.vnipool")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    f = bench_vnipool(args.clients, args.seconds)
    print(
        f"reserve(2)+release pairs: {f['pairs_per_s']:.0f}/s with {args.clients} clients; "
        f"raw EVALSHA pairs {f['raw_pairs_per_s']:.0f}/s; {100 * f['ratio']:.0f} % of raw"
    )


if __name__ == "__main__":
    main()

"""Start the real services a benchmark needs: a redis-server on a free port."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from coral2_sim.redis_server import RedisServer


@contextmanager
def redis_server() -> Iterator[str]:
    """Run a throw-away redis-server; yield its URL."""
    with RedisServer() as server:
        yield server.url


def percentile(values: list[float], q: float) -> float:
    """The ``q`` percentile (0 to 100) of ``values`` (nearest rank)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]

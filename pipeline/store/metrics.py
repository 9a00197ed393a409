"""Counters that outlive the process that counts: the transition histogram and the
task-failure totals (counted as a failure is recorded, :mod:`pipeline.store.runs`), kept
in Redis so every worker adds to the same figures and the exporter (the monitoring role,
read-only) serves them as Prometheus counters.

A transition is the time from DWS marking a Workflow's state ready (its
``status.readyChange``) to our patch of the next ``desiredState``, by the state that
became ready: the pipeline's own share of a rabbit job's start and end.
"""

from __future__ import annotations

import bisect
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

from pipeline.store.connection import store_errors, translated
from pipeline.store.keys import Keys

log = logging.getLogger("coral2_pipeline.metrics")

#: Upper bounds of the transition histogram's buckets (s); +Inf follows.
TRANSITION_BUCKETS: tuple[float, ...] = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip

#: How long a process takes a state it added to the index of states as still there (s):
#: it adds it again after that, should the index have been lost (a restored backup).
INDEXED_S = 3600.0


@dataclass(frozen=True)
class Histogram:
    """One label's histogram: cumulative counts per upper bound (+Inf last), their sum."""

    buckets: list[tuple[float, int]]
    sum: float
    count: int


@translated
class Metrics:
    """The counters under ``<prefix>:metrics:*``."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self.client, self.keys = client, keys
        self._indexed: dict[str, float] = {}  # state → when this process last indexed it

    def observe_transition(self, state: str, seconds: float) -> None:
        """Count one transition out of ``state`` that took ``seconds``. A metric is not
        worth failing a task for: a Redis error is logged and the sample dropped. The
        state joins the index of states once per :data:`INDEXED_S` a process (the
        states are a handful; the index is read by the exporter)."""
        index = bisect.bisect_left(TRANSITION_BUCKETS, max(seconds, 0.0))
        key = self.keys.transitions(state)
        now = time.monotonic()
        indexed = self._indexed.get(state)
        adds = indexed is None or now - indexed >= INDEXED_S
        try:
            with self.client.pipeline(transaction=False) as pipe:
                pipe.hincrby(key, str(index), 1)
                pipe.hincrbyfloat(key, "sum", max(seconds, 0.0))
                if adds:
                    pipe.sadd(self.keys.transition_states, state)
                pipe.execute()
        except redis.RedisError as exc:
            log.warning("transition of %s not counted: %s", state, store_errors(exc))
            return
        if adds:
            self._indexed[state] = now

    def transitions(self) -> dict[str, Histogram]:
        """Every state's histogram."""
        states = sorted(s.decode() for s in self.client.smembers(self.keys.transition_states))  # type: ignore[union-attr]
        with self.client.pipeline(transaction=False) as pipe:
            for state in states:
                pipe.hgetall(self.keys.transitions(state))
            raws = pipe.execute()
        return {state: _histogram(raw) for state, raw in zip(states, raws, strict=True)}

    def count_refusal(self, kind: str) -> None:
        """Count one message of ``kind`` Flux refused (``<prefix>:flux-refusals``)."""
        self.client.hincrby(self.keys.flux_refusals, kind, 1)

    def refusals_total(self) -> dict[str, int]:
        """Message kind → how many Flux refused, ever."""
        raw: Any = self.client.hgetall(self.keys.flux_refusals)
        return {k.decode(): int(v) for k, v in raw.items()}

    def failures_total(self) -> dict[str, int]:
        """Task name → runs failed for good, ever."""
        raw = self.client.hgetall(self.keys.failures_total)
        return {k.decode(): int(v) for k, v in raw.items()}  # type: ignore[union-attr]


def _histogram(raw: dict[bytes, bytes]) -> Histogram:
    counts = {k.decode(): v for k, v in raw.items()}
    total, cumulative = 0, []
    bounds: Sequence[float] = (*TRANSITION_BUCKETS, float("inf"))
    for index, bound in enumerate(bounds):
        total += int(counts.get(str(index), 0))
        cumulative.append((bound, total))
    return Histogram(cumulative, float(counts.get("sum", 0.0)), total)

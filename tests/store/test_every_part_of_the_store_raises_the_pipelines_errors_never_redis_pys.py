"""The store's boundary is in one place (``pipeline.store.connection.translated``): with
Redis down, every part of the store raises the pipeline's ``StoreUnavailable`` — which the
tasks retry and the commands turn into one line — and never a redis-py error (the
timeline, which drops its entries while Redis is away, aside)."""

from __future__ import annotations

import inspect
import typing

import pytest
import redis
from coral2_sim.redis_server import free_port

import pipeline.store
from pipeline.errors import StoreUnavailable
from pipeline.model.job import JobRecord
from pipeline.store import Store
from pipeline.store.outbox import OutboxMessage

DOWN = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there


@pytest.fixture
def store() -> Store:
    client = redis.Redis.from_url(DOWN, socket_connect_timeout=0.5, socket_timeout=0.5)
    return Store(client, Store.from_url(DOWN, "down").keys)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.jobs.get(1),
        lambda s: s.jobs.create(JobRecord(jobid=1)),
        lambda s: s.outbox.append(OutboxMessage("memo", 1, {"id": 1})),
        lambda s: s.ledger.pending(),
        lambda s: s.deadlines.pending(),
        lambda s: s.watch.seen(),
        lambda s: s.told.get("rabbit1"),
        lambda s: s.vnipool.counts(),
        lambda s: s.metrics.refusals_total(),
        lambda s: s.systemstatus.missing(),
        lambda s: s.resource_log.length(),
    ],
)
def test_a_call_with_redis_down_raises_store_unavailable(store: Store, call: object) -> None:
    assert callable(call)
    with pytest.raises(StoreUnavailable):
        call(store)


def test_every_public_method_of_every_part_is_behind_the_boundary() -> None:
    names = {name: getattr(pipeline.store, name) for name in pipeline.store.__all__}  # lazy too
    parts = [
        value.func
        for value in vars(Store).values()
        if hasattr(value, "func") and inspect.isfunction(value.func)
    ]
    unwrapped, checked = [], 0
    for make in parts:
        cls = typing.get_type_hints(make, localns=names)["return"]
        if not isinstance(cls, type) or not cls.__module__.startswith("pipeline.store"):
            continue
        checked += 1
        for name, attr in vars(cls).items():
            if name.startswith("_") or not inspect.isfunction(attr):
                continue
            if inspect.isgeneratorfunction(attr) or hasattr(attr, "__wrapped__"):
                continue
            unwrapped.append(f"{cls.__name__}.{name}")
    assert checked >= 20  # every part the Store makes
    assert unwrapped == []

"""A job lock can be taken and released among other commands in one pipeline (a task's
start and end, one round trip each): the block adopts the lock it was given, releases
it once, and never frees a lock someone else took after it."""

from __future__ import annotations

import logging

import pytest

from pipeline.store import Store
from tests.store.renewals import wait_renewed


def take(store: Store, jobid: int, ttl_s: float = 10.0) -> str | None:
    pipe = store.client.pipeline(transaction=False)
    pipe.incr("other-command")
    token = store.locks.acquire_in(pipe, jobid, ttl_s=ttl_s)
    _, taken = pipe.execute()
    return token if taken else None


def test_a_lock_taken_in_a_pipeline_is_held_with_its_token(store: Store) -> None:
    token = take(store, 1)
    assert token is not None
    assert take(store, 1) is None  # taken: a second try fails
    with store.locks.held(1, token=token, ttl_s=0.3, wait_s=0.0) as holding:
        assert holding.token == token
        assert store.client.get(store.keys.lock(1)) == token.encode()
    assert store.client.get(store.keys.lock(1)) is None


def test_a_lock_released_in_a_pipeline_is_not_released_again_by_its_block(
    store: Store,
) -> None:
    with store.locks.held(2, ttl_s=0.3) as holding:  # a short life: its keeper ends soon
        pipe = store.client.pipeline(transaction=False)
        store.locks.release_in(pipe, holding)
        pipe.incr("other-command")
        pipe.execute()
        assert store.client.get(store.keys.lock(2)) is None
        other = store.locks.acquire(2)  # another worker takes it at once
        assert other is not None
    assert store.client.get(store.keys.lock(2)) == other.encode()


def test_the_keeper_stops_renewing_a_lock_released_in_a_pipeline(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="coral2_pipeline.store.locks")
    with store.locks.held(3, ttl_s=0.15) as holding, store.locks.held(4, ttl_s=0.15):
        pipe = store.client.pipeline(transaction=False)
        store.locks.release_in(pipe, holding)
        pipe.execute()
        # the keeper renews lock 4, held beside it and due with it, twice: so it went over
        # its held locks twice after lock 3 was released (never proven by sleeping)
        wait_renewed(store, 4)
    assert not [r for r in caplog.records if "lost the lock" in r.getMessage()]

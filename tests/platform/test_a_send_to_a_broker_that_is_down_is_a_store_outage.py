"""A task sent while the broker is down (restarting, loading its data) fails as a store
outage — ``StoreUnavailable``, which every caller waits out or answers as an error — not as
kombu's own exception, which would escape a hook's handler; its ledger entry is crossed
out, so nothing is sent behind the caller's back later."""

from __future__ import annotations

import socket

import pytest

from pipeline.errors import StoreUnavailable
from pipeline.platform.app import create_app
from pipeline.platform.sending import dispatch, dispatch_nodes, store_of
from pipeline.settings import load_settings


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_send_to_a_broker_that_is_down_is_a_store_outage(redis_url: str) -> None:
    settings = load_settings(
        env={
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": f"redis://127.0.0.1:{closed_port()}/0",
            "CORAL2_PIPELINE_PIPELINE__REDIS_URL": redis_url,
            "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "broker-down",
        }
    )
    app = create_app(settings, set_current=False)
    store = store_of(app)
    with pytest.raises(StoreUnavailable, match="the broker"):
        dispatch(app, store, "job.answers_complete", {"jobid": 1})
    with pytest.raises(StoreUnavailable, match="the broker"):
        dispatch_nodes(app, store, [("c1", "node.prolog", {"jobid": 1})])
    assert store.ledger.pending() == 0

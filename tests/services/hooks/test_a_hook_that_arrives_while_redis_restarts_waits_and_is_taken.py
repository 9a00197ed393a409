"""A hook that arrives while the pipeline cannot take it (Redis restarting) is kept
waiting and taken once Redis answers: dws-jobtap ignores the answer to dws.teardown, so a
teardown dropped then would hold its job's epilog for good. Past the retry time the
request fails with the store's error, and a bad request is refused at once."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.errors import StoreUnavailable
from pipeline.services.hooks import Hooks
from pipeline.settings import load_settings


class Restarting:
    """An enqueue that fails while Redis restarts (``down`` calls), then takes messages."""

    def __init__(self, down: int) -> None:
        self.down = down
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, name: str, kwargs: dict[str, Any]) -> None:
        if self.down > 0:
            self.down -= 1
            raise StoreUnavailable("Redis unavailable: connection refused")
        self.sent.append((name, kwargs))


def test_a_teardown_during_a_restart_is_taken_once_redis_answers() -> None:
    enqueue = Restarting(down=3)
    hooks = Hooks(load_settings(env={}), enqueue, owner_uid=0, retry_s=5.0)
    assert hooks.dispatch("dws.teardown", {"jobid": 7}) == {"success": True}
    assert enqueue.sent == [("dws.teardown", {"jobid": 7})]


def test_past_the_retry_time_the_request_fails_with_the_stores_error() -> None:
    hooks = Hooks(load_settings(env={}), Restarting(down=10**6), owner_uid=0, retry_s=0.3)
    with pytest.raises(StoreUnavailable):
        hooks.dispatch("dws.abort", {"jobid": 8})


def test_a_bad_request_is_refused_at_once_without_waiting() -> None:
    hooks = Hooks(load_settings(env={}), Restarting(down=0), owner_uid=0, retry_s=30.0)
    answer = hooks.dispatch("dws.teardown", {"jobid": "x"})
    assert answer["success"] is False and "jobid" in answer["errstr"]

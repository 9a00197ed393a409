"""A ``dws.*`` request the pipeline cannot take yet (Redis restarting) is not waited on in
the bridge's message handler: the handler returns at once, the request is tried again on
a reactor timer, and answered when it is taken — once — or refused with the error once
``retry_s`` has passed since it arrived. Meanwhile the reactor turns: other requests
are answered and the watchdog is pinged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.errors import StoreUnavailable
from pipeline.services.bridge.requests import Requests
from pipeline.services.hooks import Hooks
from pipeline.settings import load_settings
from pipeline.store import Store


class Reactor:
    """The bridge's timers, turned by hand; its clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[tuple[float, Callable[[], None]]] = []

    def later(self, delay_s: float, callback: Callable[[], None]) -> None:
        self.timers.append((self.now + delay_s, callback))

    def turn(self) -> None:
        """Fire the earliest timer, the clock moved to it."""
        self.timers.sort(key=lambda t: t[0])
        at, callback = self.timers.pop(0)
        self.now = max(self.now, at)
        callback()


class Redis:
    """An enqueue that fails while Redis is down."""

    def __init__(self) -> None:
        self.down = True
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def enqueue(self, name: str, kwargs: dict[str, Any]) -> None:
        if self.down:
            raise StoreUnavailable("Redis unavailable: Connection refused")
        self.sent.append((name, kwargs))


def requests(store: Store, reactor: Reactor, redis: Redis) -> Requests:
    hooks = Hooks(load_settings(env={}), redis.enqueue, owner_uid=0, retry_s=30.0)
    return Requests(hooks, store, reactor.later, clock=lambda: reactor.now)


def test_the_handler_returns_at_once_and_the_request_is_answered_once_taken(
    store: Store,
) -> None:
    reactor, redis = Reactor(), Redis()
    answers: list[dict[str, Any]] = []
    serve = requests(store, reactor, redis)
    serve("dws.teardown", {"jobid": 5}, answers.append)
    assert answers == [] and len(reactor.timers) == 1  # put off, not slept on
    assert serve.waiting == 1
    serve("dws.status", None, answers.append)  # the reactor goes on answering others
    assert answers == [{"success": True, "workflows": []}]
    reactor.turn()
    assert len(answers) == 1 and len(reactor.timers) == 1  # still down: put off again
    redis.down = False
    reactor.turn()
    assert answers[1] == {"success": True}
    assert redis.sent == [("dws.teardown", {"jobid": 5})]  # enqueued once
    assert reactor.timers == [] and serve.waiting == 0


def test_a_request_still_not_taken_after_retry_s_is_refused_with_the_error(
    store: Store,
) -> None:
    reactor, redis = Reactor(), Redis()
    answers: list[dict[str, Any]] = []
    serve = requests(store, reactor, redis)
    serve("dws.abort", {"jobid": 6}, answers.append)
    while not answers:
        assert reactor.now <= 31.0, "never answered"
        reactor.turn()
    assert reactor.now >= 30.0  # tried for retry_s, on timers
    assert answers == [{"success": False, "errstr": "Redis unavailable: Connection refused"}]
    assert redis.sent == [] and reactor.timers == [] and serve.waiting == 0


def test_a_request_the_pipeline_takes_at_once_is_answered_at_once(store: Store) -> None:
    reactor, redis = Reactor(), Redis()
    redis.down = False
    answers: list[dict[str, Any]] = []
    requests(store, reactor, redis)(
        "dws.post_run", {"jobid": 7, "run_started": True}, answers.append
    )
    assert answers == [{"success": True}] and reactor.timers == []

"""The ``dws.*`` requests the bridge answers, without ever blocking its reactor.

A request the pipeline cannot take yet (Redis restarting: a
:class:`~pipeline.errors.TemporaryError`) is not slept on inside the message
handler, as that would stop everything else the reactor does (the events
journal, outbox delivery, the systemd watchdog's pings) for as long as it
waits. It is tried again on a reactor timer, and answered when it is taken, or
refused once ``retry_s`` has passed since it arrived (dws-jobtap then raises
the job's exception, as it does for coral2_dws's refusals).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from pipeline.errors import TemporaryError
from pipeline.services.bridge.service import serve
from pipeline.services.hooks import Hooks, retry_delay
from pipeline.store import Store

log = logging.getLogger("coral2_pipeline.bridge")

#: How a request is answered (once).
Reply = Callable[[dict[str, Any]], None]
#: How a call is put off: ``later(delay_s, callback)`` on the reactor's timers.
Later = Callable[[float, Callable[[], None]], None]


class Requests:
    """Answers each request through its ``reply``, now or on a later turn of the reactor."""

    def __init__(
        self,
        hooks: Hooks,
        store: Store,
        later: Later,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.hooks, self.store, self.later, self.clock = hooks, store, later, clock
        self.waiting = 0  # requests put off, not answered yet

    def __call__(self, topic: str, payload: Any, reply: Reply) -> None:
        """Answer one request (the bridge's :data:`~pipeline.clients.flux.Responder`)."""
        self._attempt(topic, payload, reply, self.clock() + self.hooks.retry_s, first=True)

    def _attempt(
        self, topic: str, payload: Any, reply: Reply, deadline: float, *, first: bool
    ) -> None:
        try:
            answer = serve(self.hooks, self.store, topic, payload, wait=False)
        except TemporaryError as exc:
            if self.clock() < deadline:
                if first:
                    self.waiting += 1
                    log.warning("%s: %s; trying again without holding the reactor", topic, exc)

                def again() -> None:
                    self._attempt(topic, payload, reply, deadline, first=False)

                self.later(retry_delay(exc), again)
                return
            answer = {"success": False, "errstr": str(exc)}
        if not first:
            self.waiting -= 1
        if not answer["success"]:
            log.error("coral2_dws.py: %s", answer["errstr"])
        reply(answer)

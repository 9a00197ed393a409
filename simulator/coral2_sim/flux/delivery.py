"""The bridge's outbox delivery as the simulated system runs it: a thread beside the
simulated job manager, which the chaos harness can kill.

:meth:`DeliveryThread.kill` does to the delivery what SIGKILL does to a
``coral2-pipeline flux-bridge``: the running delivery stops for good at its
next Flux request, either just before Flux gets it or just after Flux took it
(drawn at random), with nothing acknowledged and its in-memory state (the acks
Redis owes it) lost; a new delivery, with a new :class:`Deliverer` under the
same consumer name, starts at once, as systemd restarts the bridge. The entries
the dead one had read are reclaimed once idle, as after a real crash. The events
journal is read on by the same consumer (the simulated job manager feeds one).
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipeline.errors import StoreUnavailable
from pipeline.model.eventlog import EventlogEntry
from pipeline.services.bridge.delivery import Deliverer, FluxEndpoint, PathOf
from pipeline.store.outbox import Outbox

log = logging.getLogger("coral2_coral2_sim")


@dataclass
class _Life:
    """One run of the delivery: where it dies ("before" or "after" a request), if killed."""

    dies: str | None = None
    dead: threading.Event = field(default_factory=threading.Event)


class _Dead(Exception):
    """Raised in a killed delivery's thread once the system stops: the thread ends."""


class _Mortal:
    """The Flux endpoint as one run of the delivery sees it: killed, it stops there."""

    def __init__(self, flux: FluxEndpoint, life: _Life, stopping: threading.Event) -> None:
        self.flux, self.life, self.stopping = flux, life, stopping

    def _die(self, point: str) -> None:
        if self.life.dies == point:
            self.life.dead.set()
            self.stopping.wait()  # a dead process does nothing more: here, until the end
            raise _Dead  # the system stops: let the thread go

    def rpc(self, topic: str, payload: dict[str, Any], nodeid: int = 0) -> dict[str, Any]:
        self._die("before")
        answer = self.flux.rpc(topic, payload, nodeid)
        self._die("after")
        return answer

    def kvs_put(self, jobid: int, key: str, value: Any) -> None:
        self._die("before")
        self.flux.kvs_put(jobid, key, value)
        self._die("after")

    def eventlog(self, jobid: int) -> list[EventlogEntry]:
        self._die("before")
        return self.flux.eventlog(jobid)

    def kvs_get(self, jobid: int, key: str) -> tuple[bool, Any]:
        self._die("before")
        return self.flux.kvs_get(jobid, key)


class DeliveryThread:
    """Deliver ``outbox`` to ``flux`` until ``stopping``; ``before_each`` runs first in
    every round (the journal's pending reports)."""

    def __init__(
        self,
        outbox: Outbox,
        flux: FluxEndpoint,
        consumer: str,
        path_of: PathOf,
        stopping: threading.Event,
        before_each: Callable[[], None] = lambda: None,
    ) -> None:
        self.outbox, self.flux, self.consumer, self.path_of = outbox, flux, consumer, path_of
        self.stopping = stopping
        self.before_each = before_each
        self.life = _Life()
        self.threads: list[threading.Thread] = []

    def start(self) -> DeliveryThread:
        life = self.life
        deliverer = Deliverer(
            self.outbox, _Mortal(self.flux, life, self.stopping), self.consumer, self.path_of
        )

        def deliver() -> None:
            while not self.stopping.is_set() and life.dies is None:
                try:
                    self.before_each()
                    deliverer.run_once(block_ms=100)
                except StoreUnavailable:
                    self.stopping.wait(0.1)
                except _Dead:
                    return

        thread = threading.Thread(target=deliver, name="outbox-delivery", daemon=True)
        thread.start()
        self.threads.append(thread)
        return self

    def kill(self, rng: random.Random) -> str:
        """Kill the running delivery at its next Flux request, before or after Flux takes
        it, and start a new one; return where it died."""
        self.life.dies = rng.choice(["before", "after"])
        point = self.life.dies
        self.life = _Life()
        self.start()
        return point

    def join(self, timeout_s: float) -> None:
        """Wait for the threads to end (after ``stopping`` is set)."""
        for thread in self.threads:
            thread.join(timeout=timeout_s)

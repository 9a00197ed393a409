"""A rate-free work queue with client-go's guarantees, for the simulated controllers.

* A name added while it waits is queued once (a burst of watch events is
  one reconcile).
* A name is handed to one worker at a time: added while a worker holds it,
  it is queued again when that worker calls :meth:`WorkQueue.done`, so a
  change seen mid-reconcile is never lost and never raced.
* :meth:`WorkQueue.add_after` adds a name later (requeue with a delay).

Several threads may call :meth:`WorkQueue.get` at once; that is the point.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque


class WorkQueue:
    """Names to reconcile; see the module docstring."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._timers: list[tuple[float, int, str]] = []
        self._seq = 0
        self._closed = False

    def add(self, name: str) -> None:
        """Queue ``name`` (once, however often it is added before a worker takes it)."""
        with self._cond:
            self._add(name)

    def _add(self, name: str) -> None:
        if self._closed or name in self._dirty:
            return
        self._dirty.add(name)
        if name not in self._processing:
            self._queue.append(name)
            self._cond.notify()

    def add_after(self, name: str, delay_s: float) -> None:
        """Queue ``name`` in ``delay_s`` seconds (at once when ``delay_s`` <= 0)."""
        with self._cond:
            if delay_s <= 0:
                self._add(name)
                return
            self._seq += 1
            heapq.heappush(self._timers, (time.monotonic() + delay_s, self._seq, name))
            self._cond.notify_all()  # a waiter may now have an earlier wake-up

    def get(self) -> str | None:
        """Block until a name is ready and hand it to the caller; None once closed.

        The caller must call :meth:`done` with the name when finished.
        """
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                while self._timers and self._timers[0][0] <= now:
                    self._add(heapq.heappop(self._timers)[2])
                if self._queue:
                    name = self._queue.popleft()
                    self._dirty.discard(name)
                    self._processing.add(name)
                    return name
                self._cond.wait(self._timers[0][0] - now if self._timers else None)
            return None

    def done(self, name: str) -> None:
        """Release ``name``; queue it again if it was added while held."""
        with self._cond:
            self._processing.discard(name)
            if name in self._dirty and not self._closed:
                self._queue.append(name)
                self._cond.notify()

    def close(self) -> None:
        """Wake every waiter; :meth:`get` returns None from now on."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue) + len(self._timers)

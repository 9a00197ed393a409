"""The simulators' heaps, kept out of CPython's full collections.

kube-apiserver and etcd are Go programs, whose collector runs beside them with pauses of
well under a millisecond; flux-core is C. The simulated API server holds the whole
simulated cluster — every Workflow, Servers, Computes, ClientMount and the event log — as
Python dicts, and the simulated Flux every job: at thousands of jobs in flight, hundreds
of thousands of tracked objects, which each full collection walks with the GIL held. That
pause belongs to no real part of the system, yet a benchmark would count it as the
pipeline's latency. So a simulator process freezes its heap every second
(:class:`FrozenHeap`): the young generations first collected (a request's garbage dies
there), then what is left frozen, so full collections walk only the last second's
objects. The simulators' objects are JSON trees, freed by reference counting when they
go; a reference cycle frozen while alive and dropped later stays, which a simulator that
runs for hours can afford.
"""

from __future__ import annotations

import gc
import threading

#: How often the heap is frozen (s).
EVERY_S = 1.0


class FrozenHeap:
    """A daemon thread freezing this process's heap every ``every_s`` seconds."""

    def __init__(self, every_s: float = EVERY_S) -> None:
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="frozen-heap", daemon=True)

    def start(self) -> FrozenHeap:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def __enter__(self) -> FrozenHeap:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            gc.collect(1)
            gc.freeze()

"""A long-running process's heap, once the process is up: out of the collector's way.

CPython's cyclic garbage collector walks every object it tracks at each full collection,
holding the GIL while it does. A management process has imported Celery, kombu, pydantic
and the official Kubernetes client before it serves: tens of thousands of tracked objects
(modules, classes, functions, the client's models) that live as long as the process, and
a full collection walks them all again — a pause in which no task, watch event or Flux
request moves ([performance.md](../../docs/performance.md) gives its length). :func:`settle`, called
once a process is up (the worker consuming, beat scheduling, the watcher watching, the
bridge serving), collects what start-up left and freezes the rest (:func:`gc.freeze`): later
collections walk only what came after. Frozen objects are still freed by reference
counting when they die; only a reference cycle among them would outlive its use, and what
is alive once a process is up lives as long as it does.
"""

from __future__ import annotations

import gc


def settle() -> int:
    """Collect what start-up left, then move everything left out of later collections'
    walk; return how many objects were frozen (every call adds what came since)."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()

"""Run a pipeline task through the worker and wait for its return value."""

from __future__ import annotations

from typing import Any


def result_of(task: Any, **kwargs: Any) -> Any:
    """Send ``task`` with ``kwargs``, asking for its result (pipeline tasks keep none unless
    a sender asks), and return it."""
    return task.apply_async(kwargs=kwargs, ignore_result=False).get(timeout=30)

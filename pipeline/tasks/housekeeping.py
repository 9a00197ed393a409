"""Housekeeping tasks that are not tied to one job's lifecycle."""

from __future__ import annotations

from pipeline.tasks.base import pipeline_task


@pipeline_task("housekeeping.ping", queue="housekeeping", max_attempts=3, keep_result=True)
def ping(token: str) -> str:
    """Echo ``token``; used by ``coral2-pipeline`` health checks and the benchmark ceiling.

    Enqueued by operators and benchmarks, who wait for its result; does no work.
    """
    return token

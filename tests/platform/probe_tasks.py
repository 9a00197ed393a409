"""Tasks declared with our decorator that report what the base class did, through Redis.

They keep their results (``keep_result=True``): the tests wait for them.
"""

from __future__ import annotations

import time

from pipeline.errors import PermanentError, TemporaryError
from pipeline.platform.task import PipelineTask, pipeline_task


@pipeline_task(
    "probe.flaky", queue="housekeeping", retry_base_s=0.01, retry_cap_s=0.05, keep_result=True
)
def flaky(task: PipelineTask, key: str, failures: int) -> int:
    """Fail ``failures`` times with a TemporaryError, then return the number of runs."""
    runs = int(task.store.client.incr(key))
    if runs <= failures:
        raise TemporaryError(f"run {runs} fails", delay_s=0.01)
    return runs


@pipeline_task("probe.permanent", queue="housekeeping", keep_result=True)
def permanent(task: PipelineTask, jobid: int) -> None:
    """Always fail permanently."""
    raise PermanentError(f"job {jobid} cannot be helped")


@pipeline_task("probe.locked", queue="lifecycle", lock_job=True, keep_result=True)
def locked(task: PipelineTask, jobid: int, key: str) -> None:
    """Mark the job busy for a while; count an overlap if it already was."""
    client = task.store.client
    if client.getset(key, 1) == b"1":
        client.incr(key + ":overlaps")
    time.sleep(0.02)
    client.set(key, 0)


@pipeline_task("probe.slow_once", queue="housekeeping", keep_result=True)
def slow_once(task: PipelineTask, key: str) -> int:
    """Sleep long on the first start (to be killed), finish at once after; count both."""
    client = task.store.client
    starts = int(client.incr(key + ":starts"))
    if starts == 1:
        time.sleep(120)
    client.incr(key + ":done")
    return starts


@pipeline_task("probe.broken", queue="housekeeping", keep_result=True)
def broken(task: PipelineTask, key: str) -> None:
    """Count the start, then fail as a bug would (neither temporary nor permanent)."""
    task.store.client.incr(key)
    raise RuntimeError("a bug")


@pipeline_task(
    "probe.marked", queue="housekeeping", retry_base_s=0.01, retry_cap_s=0.05, keep_result=True
)
def marked(task: PipelineTask, key: str, ending: str) -> None:
    """Hand the base class the mark ``key`` as the run's after-work write, count the run,
    then end as ``ending`` says: ``ok``, ``retry-once`` (a TemporaryError on the first
    run), ``permanent`` or ``bug``."""
    client = task.store.client
    task.after_work(lambda pipe: pipe.incr(key + ":marks"))
    runs = int(client.incr(key + ":runs"))
    if ending == "retry-once" and runs == 1:
        raise TemporaryError("not yet", delay_s=0.01)
    if ending == "permanent":
        raise PermanentError("cannot be done")
    if ending == "bug":
        raise RuntimeError("a bug")

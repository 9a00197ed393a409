"""The one base Task class and the task decorator: every cross-cutting concern lives here.

* **Options validated at import.** :func:`pipeline_task` accepts only the
  options it knows and a queue from :data:`FIXED_QUEUES`; anything else
  raises ``ValueError`` naming it, so a typo fails when the module loads.
  Node-pinned tasks are sent to ``node.<hostname>`` only through
  :func:`node_queue`.
* **Per-job lock.** A task declared with ``lock_job=True`` holds the job's
  Redis lock (owner token, expiry) for its whole run; tasks of different
  jobs run in parallel.
* **Errors → behaviour.** :class:`~pipeline.errors.TemporaryError` retries
  with capped exponential backoff (or the error's own ``delay_s`` if
  longer); :class:`~pipeline.errors.PermanentError` is recorded in
  ``<prefix>:failures`` and the task ends without retrying.
* **Poison messages.** Every failed run of a message (an unexpected
  exception, a permanent error) increments a counter in Redis; past
  ``max_attempts`` failures the message is recorded as failed and dropped
  instead of failing forever. Runs that end because a worker was killed, and
  retries of temporary errors, are not failures: churn never drops a
  healthy message.
* **No lost messages.** Every message is noted in the store's ledger before
  it is sent (:mod:`pipeline.platform.sending`); a task crosses its entry out
  when it ends (success, permanent failure, dropped), a retry postpones it,
  and ``housekeeping.redeliver`` sends again the entries left without an
  outcome.
* **Marks after the work.** A task body hands :meth:`PipelineTask.after_work` the writes
  that say its work is done; they go into the round trip that settles the run, and only
  if the run succeeds.
* **Log context.** Records carry ``jobid``, ``task`` and ``attempt``.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from functools import cached_property
from typing import Any, Literal

from celery import Task, shared_task

from pipeline.clients.k8s import DwsClient, api_client
from pipeline.errors import PermanentError, TemporaryError
from pipeline.platform.routing import NODE_QUEUE_PREFIX, QueueRouter, node_queue
from pipeline.platform.sending import dispatch, settings_of, store_of
from pipeline.settings import Settings
from pipeline.store import Holding, Keys, Store
from pipeline.store.backlog import RESENT_HEADER

log = logging.getLogger("coral2_pipeline.tasks")

#: The marks the run in progress on this thread hands :meth:`PipelineTask.after_work`.
_AFTER = threading.local()

__all__ = ["NODE_QUEUE_PREFIX", "PipelineTask", "QueueRouter", "node_queue", "pipeline_task"]

FIXED_QUEUES = frozenset({"lifecycle", "timeouts", "housekeeping"})

#: The per-job lock lives this long past its holder's last heartbeat (a killed worker's
#: lock frees within it); the holder renews it every third of it.
LOCK_TTL_S = 10.0

#: Tasks too frequent or too plain for a job's timeline: the Workflow's states are in it,
#: and a node's answers, one per node of the job, are in the node-work trace
#: (``pipeline.platform.nodework``)
QUIET_TASKS = frozenset(
    {"dws.observe", "job.prolog_done", "job.clientmount_done", "job.epilog_done"}
)


#: The process's DWS clients by (API host, kubeconfig, namespace, version): one each.
_DWS_CLIENTS: dict[tuple[str | None, str | None, str, str | None], DwsClient] = {}


def _dws(
    host: str | None, kubeconfig: str | None, namespace: str, version: str | None
) -> DwsClient:
    """The process's DWS client, speaking the newest version the API server serves (probed
    before its first request; an outage raises and the next request probes again)."""
    key = (host, kubeconfig, namespace, version)
    client = _DWS_CLIENTS.get(key)
    if client is None:
        made = DwsClient(
            api_client(host=host, kubeconfig=kubeconfig), namespace=namespace, version=version
        ).probe_lazily(version)
        client = _DWS_CLIENTS.setdefault(key, made)
        if client is not made:  # another thread made one first
            made.close()
    return client


def close_dws_clients(host: str) -> None:
    """Close and forget this process's DWS clients of API server ``host`` (one that has
    stopped for good): their pooled connections are closed, not left to the collector."""
    for key in [k for k in _DWS_CLIENTS if k[0] == host]:
        _DWS_CLIENTS.pop(key).close()


class PipelineTask(Task):  # type: ignore[misc]
    """Base class of every pipeline task (see the module docstring)."""

    logical_queue: str = "lifecycle"
    lock_job: bool = False
    max_attempts: int = 20
    retry_base_s: float = 0.5
    retry_cap_s: float = 60.0
    #: A key of the job (``Keys`` method of the jobid) deleted as each run starts.
    clears: Callable[[Keys, int], str] | None = None

    # Each app has its own instance of each task, and an app's settings do not change once
    # its tasks run: resolved once per instance, not through the settings' lookups per use.
    @cached_property
    def settings(self) -> Settings:
        """The settings of the task's app."""
        return settings_of(self.app)

    @cached_property
    def store(self) -> Store:
        """The Redis store of the app's settings (one client per process)."""
        return store_of(self.app)

    @cached_property
    def dws(self) -> DwsClient:
        """The DWS client of the app's settings (one per process)."""
        pipeline, rabbit = self.settings.pipeline, self.settings.rabbit
        return _dws(
            pipeline.api_host,
            pipeline.kubeconfig or rabbit.kubeconfig,
            pipeline.namespace,
            rabbit.dws_api_version,
        )

    def enqueue(self, name: str, **kwargs: Any) -> str:
        """Send task ``name`` with ``kwargs`` through this task's own app (see
        :func:`dispatch`); return its task id."""
        return dispatch(self.app, self.store, name, kwargs)

    def record_failure(self, jobid: int | None, reason: str) -> None:
        """Record a permanent failure of this task message."""
        entry = {"task": self.name, "jobid": jobid, "reason": reason, "time": time.time()}
        self.store.runs.record_failure(self.request.id or "eager", entry)

    def after_work(self, write: Callable[[Any], None]) -> None:
        """Have ``write`` (called with a Redis pipeline) say that this run's work is done:
        it joins the round trip that settles the run, and only if the run succeeds — a run
        that fails or retries, or a worker killed first, leaves no such mark."""
        _AFTER.writes.append(write)

    def _settle(
        self,
        holding: Holding | None = None,
        *,
        until: float | None = None,
        now: float = 0.0,
        after: Sequence[Callable[[Any], None]] = (),
    ) -> None:
        self.store.runs.settle(
            self.name, self.request.id, holding, until=until, now=now or None, after=after
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        jobid = kwargs.get("jobid")
        lock_jobid = int(jobid) if self.lock_job and jobid is not None else None
        clears = (
            self.clears(self.store.keys, int(jobid)) if self.clears and jobid is not None else None
        )
        attempt, token = self.store.runs.begin(
            self.request.id or "eager",
            lock_jobid=lock_jobid,
            lock_ttl_s=LOCK_TTL_S,
            clears=clears,
            # a failed run is acknowledged and its entry kept: only a resend brings it back
            may_have_failed=bool(self.request.get(RESENT_HEADER)) or not self.request.id,
        )
        extra = {"jobid": jobid, "task": self.name, "attempt": attempt}
        if attempt > self.max_attempts:
            reason = f"dropped after {attempt - 1} failed runs (poison message?)"
            log.error("%s: %s", self.name, reason, extra=extra)
            self.record_failure(jobid, reason)
            taken = Holding(lock_jobid, token) if lock_jobid is not None and token else None
            self._settle(taken)
            self._timeline(jobid, f"{self.name} run {attempt}: {reason}")
            return None
        guard: AbstractContextManager[Holding | None] = (
            self.store.locks.held(lock_jobid, ttl_s=LOCK_TTL_S, token=token)
            if lock_jobid is not None
            else nullcontext()
        )
        outer, _AFTER.writes = getattr(_AFTER, "writes", []), []  # a task run inside a task
        try:
            with guard as holding:
                result = self.run(*args, **kwargs)
                # lock release, ledger, the body's marks and the timeline's line in one
                # round trip
                done = f"{self.name} run {attempt}: done"
                self._settle(holding, after=[*_AFTER.writes, *self._timeline_in(jobid, done)])
        except TemporaryError as exc:
            retries = self.request.retries
            # equal jitter: half the backoff, plus up to as much again at random, so tasks
            # that failed together (a Redis or API-server outage) do not retry together
            backoff = min(self.retry_cap_s, self.retry_base_s * 2**retries)
            countdown = max(backoff / 2 + random.uniform(0, backoff / 2), exc.delay_s)
            log.warning("%s: %s; retry in %.1fs", self.name, exc, countdown, extra=extra)
            self._timeline(jobid, f"{self.name} run {attempt}: retry in {countdown:.1f} s: {exc}")
            resend_after_s = self.settings.pipeline.resend_after
            now = time.time()  # a clock step moves every due time, in the same step
            self._settle(until=now + countdown + resend_after_s, now=now)
            raise self.retry(exc=exc, countdown=countdown) from exc
        except PermanentError as exc:
            log.error("%s: %s", self.name, exc, extra=extra)
            self.store.runs.failed(self.request.id or "eager")
            self.record_failure(jobid, str(exc))
            self._settle()
            self._timeline(jobid, f"{self.name} run {attempt}: failed: {exc}")
            return None
        except Exception as exc:
            # An unexpected error (a bug) is counted and leaves the ledger entry: the
            # message is sent again later, ever more rarely, until max_attempts drops it.
            self.store.runs.failed(self.request.id or "eager")
            self._timeline(jobid, f"{self.name} run {attempt}: error: {type(exc).__name__}")
            raise
        finally:
            _AFTER.writes = outer
        return result

    def _timeline(self, jobid: Any, what: str) -> None:
        if isinstance(jobid, int) and self.name not in QUIET_TASKS:
            self.store.timeline.note(jobid, "task", what)

    def _timeline_in(self, jobid: Any, what: str) -> list[Callable[[Any], None]]:
        """:meth:`_timeline` as a write for the run's closing round trip (none if quiet)."""
        if not isinstance(jobid, int) or self.name in QUIET_TASKS:
            return []
        timeline = self.store.timeline
        return [lambda pipe: timeline.note_in(pipe, jobid, "task", what)]


def pipeline_task(
    name: str,
    *,
    queue: Literal["lifecycle", "timeouts", "housekeeping", "node"],
    lock_job: bool = False,
    max_attempts: int = PipelineTask.max_attempts,
    time_limit_s: float | None = None,
    retry_base_s: float = PipelineTask.retry_base_s,
    retry_cap_s: float = PipelineTask.retry_cap_s,
    max_retries: int | None = 20,
    keep_result: bool = False,
    clears: Callable[[Keys, int], str] | None = None,
) -> Callable[[Callable[..., Any]], Any]:
    """Register a task under ``name``; mypy checks every option.

    The function gets its task (a :class:`PipelineTask`) as its first argument,
    as with Celery's ``bind=True``, then the message's arguments.

    ``queue``: one of ``lifecycle``, ``timeouts``, ``housekeeping``, or ``node`` for
    node-pinned tasks (sent with ``queue=node_queue(host)``). ``lock_job``: hold the
    per-job lock. ``max_attempts``, ``time_limit_s``, ``retry_base_s``, ``retry_cap_s``,
    ``max_retries``. ``keep_result``: store the return value in the result backend
    (default False: a task's outcome lives in the job record, the outbox and
    ``<prefix>:failures``, and a stored result nobody reads costs a write, a publish and
    an hour of Redis memory per task — and a subscription in every process that sends
    one). ``clears``: the job's key (of :class:`~pipeline.store.keys.Keys`) deleted in
    the round trip that takes the job's lock (a coalescing mark).
    """
    if queue != "node" and queue not in FIXED_QUEUES:
        raise ValueError(
            f"task {name!r}: queue {queue!r} is not one of {sorted(FIXED_QUEUES)} or 'node' "
            "(node tasks are routed with node_queue(hostname))"
        )
    celery_options: dict[str, Any] = {
        "name": name,
        "base": PipelineTask,
        "logical_queue": queue,
        "lock_job": lock_job,
        "max_attempts": max_attempts,
        "retry_base_s": retry_base_s,
        "retry_cap_s": retry_cap_s,
        "max_retries": max_retries,
        # a plain function as a class attribute would be bound to the task: keep it unbound
        "clears": staticmethod(clears) if clears else None,
        "ignore_result": not keep_result,
        "bind": True,  # the function's first argument is its task: no proxy lookup per use
    }
    if time_limit_s is not None:
        celery_options["time_limit"] = time_limit_s
    decorator: Callable[[Callable[..., Any]], Any] = shared_task(**celery_options)
    return decorator

"""Kill points: a task dies between two of its actions, as a worker SIGKILLed there would.

:func:`drive` runs a job's tasks in-process, in the order their messages were sent,
playing the node workers (each node task sent is answered as done). With ``kill`` =
(task name, n), the first run of that task dies just before its n-th action (n past the
last: after its last action, before it ends): nothing after runs, its message stays
unacknowledged and its ledger entry open, and — as kombu or the ledger would — the same
message is delivered again, once the job's lock has expired.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from celery import Celery, current_task

from pipeline.states.actions import Action
from pipeline.store import Store
from pipeline.tasks import act


class Killed(BaseException):
    """The worker running the task died (nothing of the task's own handling runs)."""


@dataclass
class Run:
    """What :func:`drive` did: the actions each task performed, per run, and the kill."""

    actions: Counter[str] = field(default_factory=Counter)  # task → most points in one run
    killed: tuple[str, int] | None = None


@contextmanager
def points(run: Run, kill: tuple[str, int] | None) -> Iterator[None]:
    counts: Counter[str] = Counter()
    seen: set[str] = set()

    def between(jobid: int, action: Action | None) -> None:
        name = current_task.name
        key = f"{name}#{current_task.request.id}"
        if key not in seen:  # a new run of a task: count its points afresh
            seen.add(key)
            counts[name] = 0
        counts[name] += 1
        run.actions[name] = max(run.actions[name], counts[name])
        if kill is not None and run.killed is None and (name, counts[name]) == kill:
            run.killed = kill
            raise Killed(f"{name} killed at point {counts[name]}")

    act.BETWEEN = between
    try:
        yield
    finally:
        act.BETWEEN = None


ANSWERS = {"node.prolog": "job.prolog_done", "node.epilog": "job.epilog_done"}
ANSWERS["node.clientmount"] = "job.clientmount_done"


def drive(
    app: Celery,
    store: Store,
    first: list[tuple[str, dict[str, Any]]],
    run: Run,
    kill: tuple[str, int] | None = None,
    *,
    redeliver: bool = True,
) -> list[tuple[str, dict[str, Any]]]:
    """Run ``first`` and every task they lead to until none is left. ``redeliver``
    False: the killed message is not delivered again here but returned, for the caller
    to deliver later (a redelivery that comes after other work of the job)."""
    held: list[tuple[str, dict[str, Any]]] = []
    queue: deque[tuple[str, dict[str, Any], str | None]] = deque(
        (name, kwargs, None) for name, kwargs in first
    )
    done: set[str] = set()
    with points(run, kill):
        for _ in range(500):
            if not queue:
                _follow(store, queue, done)
                if not queue:
                    return held
            name, kwargs, task_id = queue.popleft()
            try:
                app.tasks[name].apply(kwargs=kwargs, task_id=task_id, throw=True)
            except Killed:
                jobid = kwargs.get("jobid")
                if jobid is not None:
                    store.client.delete(store.keys.lock(int(jobid)))  # its lock expires
                if redeliver:
                    queue.append((name, kwargs, task_id))  # delivered again
                else:
                    held.append((name, kwargs))
                    continue
            if task_id is not None:
                done.add(task_id)
            _follow(store, queue, done)
    raise AssertionError("the job's tasks did not settle in 500 runs")


def _follow(
    store: Store, queue: deque[tuple[str, dict[str, Any], str | None]], done: set[str]
) -> None:
    """Queue every message sent and not yet run: a node task is answered as its node
    worker would, once."""
    entries, _ = store.ledger.scan(10_000)
    queued = {task_id for _, _, task_id in queue}
    for entry in sorted(entries, key=lambda e: e.first_sent):
        if entry.task_id in done or entry.task_id in queued:
            continue
        if entry.name in ANSWERS:
            done.add(entry.task_id)
            node = entry.kwargs["hostname"]
            answer = {"jobid": entry.kwargs["jobid"], "node": node, "task_id": entry.task_id}
            if entry.name == "node.epilog":
                answer["busy"] = []
            queue.append((ANSWERS[entry.name], answer, None))
        else:
            queue.append((entry.name, entry.kwargs, entry.task_id))

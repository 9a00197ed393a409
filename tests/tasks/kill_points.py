"""Kill points: a task dies between two of its actions, as a worker SIGKILLed there would.

:func:`drive` runs a job's tasks in-process, in the order their messages were sent,
playing the node workers (each node task sent is answered as done). With ``kill`` =
(task name, i, n), the i-th run (from 0) of that task dies just before its n-th action
(n past the last: after its last action, before it ends): nothing after runs, its message stays
unacknowledged and its ledger entry open, and — as kombu or the ledger would — the same
message is delivered again, once the job's lock has expired.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from celery import Celery, current_task

from pipeline.perform import performer as act
from pipeline.states.actions import Action
from pipeline.store import Store


class Killed(BaseException):
    """The worker running the task died (nothing of the task's own handling runs)."""


#: (task name, which of its runs from 0, which point of that run from 1)
Point = tuple[str, int, int]


@dataclass
class Run:
    """What :func:`drive` did: the points each run of each task passed, and the kill."""

    runs: dict[str, list[int]] = field(default_factory=dict)  # task → points of each run
    killed: Point | None = None
    #: (task name, task id, job) → how many action lists that run performed for the job
    performs: dict[tuple[str, str, int], int] = field(default_factory=dict)

    def points(self) -> list[Point]:
        """Every point of every run: where a kill may strike."""
        return [
            (name, index, n)
            for name, runs in sorted(self.runs.items())
            for index, most in enumerate(runs)
            for n in range(1, most + 1)
        ]


@contextmanager
def points(run: Run, kill: Point | None) -> Iterator[None]:
    current: dict[str, int] = {}  # task id → its run's index among its task's runs

    def between(jobid: int, action: Action | None) -> None:
        name, task_id = current_task.name, str(current_task.request.id)
        runs = run.runs.setdefault(name, [])
        if task_id not in current:  # a new run of a task: its points counted afresh
            current[task_id] = len(runs)
            runs.append(0)
        index = current[task_id]
        runs[index] += 1
        if action is None:  # the end of one list performed
            key = (name, task_id, jobid)
            run.performs[key] = run.performs.get(key, 0) + 1
        here = (name, index, runs[index])
        if kill is not None and run.killed is None and here == kill:
            run.killed = kill
            raise Killed(f"{name} run {index} killed at point {runs[index]}")

    act.set_between(between)
    try:
        yield
    finally:
        act.set_between(None)


ANSWERS = {"node.prolog": "job.prolog_done", "node.epilog": "job.epilog_done"}
ANSWERS["node.clientmount"] = "job.clientmount_done"


def drive(
    app: Celery,
    store: Store,
    first: list[tuple[str, dict[str, Any]]],
    run: Run,
    kill: Point | None = None,
    *,
    redeliver: bool = True,
    idle: Callable[[], list[tuple[str, dict[str, Any]]]] | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """Run ``first`` and every task they lead to until none is left. ``redeliver``
    False: the killed message is not delivered again here but returned, for the caller
    to deliver later (a redelivery that comes after other work of the job). ``idle``:
    asked, whenever no task is left, for the tasks the world outside sends next (the
    watcher's observes as DWS moves a Workflow on); none: done."""
    held: list[tuple[str, dict[str, Any]]] = []
    queue: deque[tuple[str, dict[str, Any], str | None]] = deque(
        (name, kwargs, None) for name, kwargs in first
    )
    done: set[str] = set()
    with points(run, kill):
        for _ in range(500):
            if not queue:
                _follow(store, queue, done)
                if not queue and idle is not None:
                    queue.extend((name, kwargs, None) for name, kwargs in idle())
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
                    if task_id is not None:  # its ledger entry stays: not followed here
                        done.add(task_id)
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

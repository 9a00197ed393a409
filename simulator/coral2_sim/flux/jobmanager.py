"""A simulated Flux job manager: the stand-in for Flux in the demo and the tests.

Jobs go DEPEND → PRIORITY → SCHED → RUN → CLEANUP → INACTIVE with an RFC 18
eventlog, a KVS directory (``R``, ``eventlog`` and whatever the pipeline
puts), memos and exceptions (type, severity, note). A simple scheduler
(:mod:`coral2_sim.flux.sched`) places jobs on the computes of a
rabbitmapping. The ``dws-jobtap.so`` behaviour lives in
:mod:`coral2_sim.flux.jobtap` and talks to the pipeline's hooks exactly as
the plugin talks to coral2_dws; the pipeline's answers arrive through the
outbox, delivered by :class:`pipeline.services.bridge.delivery.Deliverer` into
:meth:`JobManager.rpc` — the same translation the production bridge uses.

Like flux-core's job manager it streams every posted event to an events
journal consumer (``journal``: the bridge's
:class:`~pipeline.services.bridge.journal.JobStates`), serves
``job-manager.post-event.post``, and, given a ``hold``, runs the job-manager
prolog ``perilog.so`` runs for a site with ``coral2-pipeline flux-prolog``:
the job starts once every prolog action is finished.
"""

from __future__ import annotations

import copy
import functools
import heapq
import itertools
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from coral2_sim.flux import resource_rpcs
from coral2_sim.flux.job import FluxJob, has_slot
from coral2_sim.flux.resource import ResourceService
from coral2_sim.flux.sched import Resources, Unsatisfiable, request_of
from pipeline.errors import FluxError, StoreUnavailable
from pipeline.model.eventlog import EventlogEntry
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.store.resource_log import ResourceLog

log = logging.getLogger("coral2_coral2_sim.flux")

Service = Callable[[str, dict[str, Any]], dict[str, Any]]


#: The job-manager prolog's name in the eventlog, as perilog.so posts it.
PROLOG = "job-manager.prolog"
Journal = Callable[[dict[str, Any]], None]


class Hold(Protocol):
    """The job-manager prolog (``coral2-pipeline flux-prolog``)."""

    def status(self, jobid: int) -> int | None:
        """The prolog's exit status, or None while it runs."""

    def forget(self, jobid: int) -> None:
        """The prolog was killed."""


class JobManager:
    """The simulated job manager; :meth:`start` runs it in a thread."""

    def __init__(
        self,
        mapping: RabbitMapping,
        *,
        service: Service | None = None,
        journal: Journal | None = None,
        hold: Hold | None = None,
        epilog_timeout_s: float = 0.0,
        tick_s: float = 0.005,
        eventlog: ResourceLog | None = None,
        ssd_chunks: int | None = None,
        on_start: Callable[[FluxJob], None] | None = None,
    ) -> None:
        from coral2_sim.flux.jobtap import DwsJobtap

        self.resources = Resources(mapping)
        self.resource = ResourceService(self.resources, eventlog, ssd_chunks)
        self.on_start = on_start  # the job's tasks begin (under the lock: return at once)
        self.journal = journal
        self.hold = hold
        self.jobtap = DwsJobtap(self, service, epilog_timeout_s=epilog_timeout_s)
        self.jobs: dict[int, FluxJob] = {}
        self._active: dict[int, FluxJob] = {}  # not INACTIVE, in submission order
        #: the active jobs each reactor step advances: all but those running quietly
        #: until their end (``_due``), so that a step costs what changes, not what runs
        self._busy: dict[int, FluxJob] = {}
        self._due: list[tuple[float, int]] = []  # (run_until, jobid): a heap
        self.lock = threading.RLock()
        #: scheduling passes made (a test waits for one to prove a waiting job was looked at)
        self.passes = 0
        self.tick_s = tick_s
        self.set_status: dict[str, str] = {}
        self.received: list[tuple[str, dict[str, Any]]] = []  # every RPC the bridge delivered
        self.puts: list[tuple[str, dict[str, Any]]] = []  # every KVS put it delivered
        self._t0 = time.time()
        self._seq = itertools.count(1)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._timers: list[tuple[float, int, Callable[[], None]]] = []  # a heap
        self._ticket = itertools.count()  # orders timers due at the same time
        self._store_warned = 0.0
        self.changed = threading.Condition(self.lock)

    # --- the job API (what `flux submit`, `flux cancel`, `flux job raise` do) --------------
    def submit(
        self,
        resources: list[dict[str, Any]],
        *,
        userid: int = 1001,
        runtime_s: float = 0.2,
        system: Mapping[str, Any] | None = None,
    ) -> int:
        """Submit a job; return its id (Flux-style: milliseconds since start, then a sequence).

        ValueError for resources without the ``task`` slot its tasks run in (RFC 14): the
        real Flux takes such a job, and Fluxion then allocates it nodes it cannot write an
        R for, leaving it in SCHED for ever; a simulator that ran it would flatter."""
        if not has_slot(resources, "task"):
            raise ValueError(f"jobspec: no slot labelled 'task' in resources {resources!r}")
        jobspec: dict[str, Any] = {
            "version": 1,
            "resources": resources,
            "tasks": [{"command": ["true"], "slot": "task", "count": {"per_slot": 1}}],
            "attributes": {"system": {"duration": 0, **(system or {})}},
        }
        with self.lock:
            jobid = (int((time.time() - self._t0) * 1000) << 24) | next(self._seq)
            job = FluxJob(jobid, userid, jobspec, runtime_s)
            self.jobs[jobid] = job
            self._active[jobid] = job
            self._busy[jobid] = job
            self.post(job, "submit", {"userid": userid, "urgency": 16, "flags": 0, "version": 1})
            self.post(job, "validate")
            self.jobtap.depend(job)
            self._advance(job)
            return jobid

    def cancel(self, jobid: int) -> None:
        """``flux cancel``: a sev 0 exception of type ``cancel``."""
        self.raise_exception(jobid, "cancel", 0, "")

    def raise_exception(
        self, jobid: int, type_: str, severity: int, note: str, *, finish_after_s: float = 0.0
    ) -> None:
        """``flux job raise``: post the exception; sev 0 ends the job — a running one
        ``finish_after_s`` later (its tasks slow to die)."""
        with self.lock:
            job = self._job(jobid, unknown="unknown job id")
            if job.state == "INACTIVE":
                raise FluxError("job is inactive")
            self._exception(job, type_, severity, note, finish_after_s)
            self._wake(job)
            self._advance(job)

    def tasks_exit(self, jobid: int) -> None:
        """The running job's tasks exit now: a killed job's tasks that were slow to die
        (``raise_exception(..., finish_after_s=...)``) are gone at last."""
        with self.lock:
            job = self._job(jobid, unknown="unknown job id")
            if job.state == "RUN" and job.started and job.run_until is not None:
                job.run_until = time.monotonic()
                self._wake(job)
                self._advance(job)

    def _exception(
        self, job: FluxJob, type_: str, severity: int, note: str, finish_after_s: float = 0.0
    ) -> None:
        """Post the exception and do what it does to the job, without moving it on."""
        context = {"type": type_, "severity": severity, "note": note, "userid": 0}
        job.exceptions.append(context)
        self.post(job, "exception", context)
        if severity == 0:
            self.jobtap.exception(job, type_)
            if job.state == "RUN" and not job.started:
                for name in list(job.prologs):  # Flux kills the running prolog scripts
                    if name == PROLOG and self.hold is not None:
                        self.hold.forget(job.id)
                    # perilog.so SIGTERMs its command; dws-jobtap fails its own
                    self.prolog_finish(job, name, signal.SIGTERM if name == PROLOG else 1)
            elif job.state == "RUN" and job.finish_status is None:
                job.run_until = time.monotonic() + finish_after_s  # killed
                job.finish_status = 15 if type_ == "cancel" else 1
            elif job.state in ("DEPEND", "PRIORITY", "SCHED"):
                self._enter(job, "CLEANUP")

    def job(self, jobid: int) -> FluxJob:
        with self.lock:
            return self._job(jobid)

    def wait_inactive(self, jobids: list[int], timeout_s: float) -> bool:
        """Wait until every job in ``jobids`` is INACTIVE; return whether they all are."""
        deadline = time.monotonic() + timeout_s
        with self.changed:
            while any(self.jobs[j].state != "INACTIVE" for j in jobids):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(min(left, 0.1))
        return True

    # --- the Flux endpoint the bridge delivers to ------------------------------------------
    def rpc(self, topic: str, payload: dict[str, Any], nodeid: int = 0) -> dict[str, Any]:
        """Serve one RPC the pipeline sends; raise FluxError with Flux's error text."""
        with self.lock:
            self.received.append((topic, copy.deepcopy(payload)))
            if topic.startswith("job-manager.dws."):
                answer = self.jobtap.serve(topic.removeprefix("job-manager.dws."), payload)
            elif topic == "job-manager.post-event.post":
                job = self._job(payload["id"], unknown="No such file or directory")
                if job.state == "INACTIVE":
                    raise FluxError("job is inactive")
                self.post(job, str(payload["name"]), payload.get("context"))
                answer = {}
            elif topic == "job-manager.memo":
                job = self._job(payload["id"], unknown="unknown job id")
                job.memo.update(payload["memo"])
                self.post(job, "memo", payload["memo"])
                answer = {}
            elif topic == "job-manager.raise":
                self.raise_exception(
                    payload["id"], payload["type"], payload["severity"], payload["note"]
                )
                answer = {}
            elif topic in resource_rpcs.TOPICS:
                resource_rpcs.serve(self.resource, self.resources, self.set_status, topic, payload)
                answer = {}
            else:
                raise FluxError(f"{topic}: Function not implemented")
            target = self.jobs.get(payload.get("id", -1))
            if target is not None and target.state != "INACTIVE":
                self._wake(target)
                self._advance(target)
            self.changed.notify_all()
            return answer

    def eventlog(self, jobid: int) -> list[EventlogEntry]:
        """The job's eventlog (``job-info.lookup``); FluxError for an unknown job."""
        with self.lock:
            return list(self._job(jobid).eventlog)

    def kvs_get(self, jobid: int, key: str) -> tuple[bool, Any]:
        """(whether the job's KVS directory holds ``key``, its value); FluxError for an
        unknown job."""
        with self.lock:
            kvs = self._job(jobid).kvs
            return (key in kvs), copy.deepcopy(kvs.get(key))

    def kvs_put(self, jobid: int, key: str, value: Any) -> None:
        """Put ``key`` in the job's KVS directory."""
        with self.lock:
            # kept like the RPCs: a put sent again with the same value is a duplicate too
            self.puts.append(("kvs.put", {"id": jobid, "key": key, "value": copy.deepcopy(value)}))
            self._job(jobid).kvs[key] = value

    # --- internals shared with the jobtap --------------------------------------------------
    def _job(self, jobid: int, unknown: str = "") -> FluxJob:
        """The job; FluxError with ``unknown`` (the words of the service asked) when there
        is no such job."""
        try:
            return self.jobs[jobid]
        except KeyError:
            raise FluxError(unknown or f"job {jobid} not found") from None

    def post(self, job: FluxJob, name: str, context: dict[str, Any] | None = None) -> None:
        """Append an event to the job's eventlog."""
        entry = EventlogEntry(timestamp=time.time(), name=name, context=context)
        job.eventlog.append(entry)
        job.started = job.started or name == "start"
        if self.journal is not None:
            response: dict[str, Any] = {"id": job.id, "events": [entry.to_dict()]}
            if name == "submit":
                response["jobspec"] = copy.deepcopy(job.jobspec)
            elif name == "alloc":
                response["R"] = copy.deepcopy(job.kvs.get("R"))
            self.journal(response)
        self.changed.notify_all()

    def later(self, delay_s: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` under the lock after ``delay_s`` (a one-shot reactor timer)."""
        heapq.heappush(self._timers, (time.monotonic() + delay_s, next(self._ticket), callback))

    def _wake(self, job: FluxJob) -> None:
        """Have the reactor advance ``job`` at each step again (something touched it)."""
        if job.state != "INACTIVE":
            self._busy[job.id] = job

    def _rest(self, job: FluxJob) -> None:
        """Leave ``job`` out of the reactor's steps until its end, if it only runs now."""
        if job.state == "RUN" and job.started and job.run_until is not None and not job.prologs:
            self._busy.pop(job.id, None)
            heapq.heappush(self._due, (job.run_until, job.id))

    def _enter(self, job: FluxJob, state: str) -> None:
        job.state = state
        if state == "INACTIVE":
            self._active.pop(job.id, None)
            self._busy.pop(job.id, None)
        self.changed.notify_all()
        if state == "RUN":
            self.jobtap.run(job)
            if self.hold is not None and not job.fatal:
                job.prologs[PROLOG] = None
                self.post(job, "prolog-start", {"description": PROLOG})
        elif state == "CLEANUP":
            self.jobtap.cleanup(job)

    def prolog_finish(self, job: FluxJob, name: str, status: int) -> None:
        """End the prolog ``name`` with ``status``: a wait status for the job-manager
        prolog, whose failure perilog.so raises first, in its words (on rank 0, its
        failed ranks unknown)."""
        if name in job.prologs:
            del job.prologs[name]
            if name == PROLOG and status and not job.fatal and not os.WIFSIGNALED(status):
                code = os.WEXITSTATUS(status)
                how = f"killed by signal {code - 128}" if code > 128 else f"exited with code={code}"
                self._exception(job, "prolog", 0, f"prolog {how} on unknown (rank (null))")
            self.post(job, "prolog-finish", {"description": name, "status": status})

    def epilog_finish(self, job: FluxJob, name: str, status: int) -> None:
        if name in job.epilogs:
            del job.epilogs[name]
            self.post(job, "epilog-finish", {"description": name, "status": status})

    def _advance(self, job: FluxJob) -> None:
        """Move ``job`` as far as it can go now."""
        now = time.monotonic()
        if job.state == "DEPEND" and not job.dependencies and not job.fatal:
            self.post(job, "depend")
            self.post(job, "priority", {"priority": 16})
            job.state = "PRIORITY"
            self._enter(job, "SCHED")
            try:
                job.request = request_of(job.jobspec["resources"])
                self.resources.check(job.request)
            except Unsatisfiable as exc:
                note = f"alloc denied due to type=unsatisfiable: {exc}"
                self.raise_exception(job.id, "alloc", 0, note)
        if job.state == "RUN":
            if self.hold is not None and PROLOG in job.prologs:
                code = self.hold.status(job.id)
                if code is not None:  # the command's exit code, as a wait status
                    self.prolog_finish(job, PROLOG, code << 8)
            if not job.started and not job.prologs:
                if job.fatal:
                    self._enter(job, "CLEANUP")
                else:
                    self.post(job, "start")
                    job.run_until = now + job.runtime_s
                    if self.on_start is not None:
                        self.on_start(job)
            if job.started and job.run_until is not None and now >= job.run_until:
                job.run_until = None
                status = job.finish_status or 0
                job.finish_status = status
                self.post(job, "finish", {"status": status})
                self.jobtap.finish(job)
                self._enter(job, "CLEANUP")
        if job.state == "CLEANUP" and not job.epilogs:
            if job.hosts:
                if job.started:  # the execution system gives the nodes back
                    self.post(job, "release", {"ranks": "all", "final": True})
                self.resources.release(job.hosts, job.ssd)
                self.post(job, "free")
            self.post(job, "clean")
            self._enter(job, "INACTIVE")
            job.kvs["eventlog"] = "".join(e.to_line() for e in job.eventlog)

    def _schedule(self) -> None:
        for job in list(self._busy.values()):  # a waiting job is never at rest
            if job.state != "SCHED" or job.request is None or job.fatal:
                continue
            got = self.resources.allocate(job.request, job.system.get("constraints"))
            if got is None:
                continue
            job.hosts, job.ssd = got
            job.kvs["R"] = self.resources.r_of(job.hosts, time.time(), job.runtime_s + 3600)
            self.post(job, "alloc")
            self._enter(job, "RUN")

    def step(self) -> None:
        """One pass of the reactor: timers, scheduling, and the progress of every job that
        can move (a job that only runs is woken when its time is up, or when touched)."""
        with self.lock:
            now = time.monotonic()
            due = []
            while self._timers and self._timers[0][0] <= now:
                due.append(heapq.heappop(self._timers)[2])
            for callback in due:  # one failing timer does not cost the others theirs
                if not self._guarded(callback):  # Redis is down: next tick
                    heapq.heappush(self._timers, (now, next(self._ticket), callback))
            while self._due and self._due[0][0] <= now:
                job = self._active.get(heapq.heappop(self._due)[1])
                if job is not None:
                    self._busy[job.id] = job
            self._schedule()
            self.passes += 1
            for job in list(self._busy.values()):
                self._guarded(functools.partial(self._advance, job))
                self._rest(job)

    def _guarded(self, step: Callable[[], None]) -> bool:
        """Run one callback of the reactor: it survives a bad one, like Flux's. Return
        False when Redis was down (restarting): one line, and it is for the next tick."""
        try:
            step()
        except StoreUnavailable as exc:
            now = time.monotonic()
            if now - self._store_warned > 5:
                self._store_warned = now
                log.warning("job manager: %s; trying again", exc)
            return False
        except Exception:
            log.exception("job manager step failed")
        return True

    def start(self) -> JobManager:
        self.resource.start()

        def loop() -> None:
            while not self._stop.wait(self.tick_s):
                try:
                    self.step()
                except Exception:  # the reactor must survive a bad callback, like Flux's
                    log.exception("job manager step failed")

        self._thread = threading.Thread(target=loop, name="flux-job-manager", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

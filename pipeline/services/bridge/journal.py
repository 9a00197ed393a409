"""Every job's RUN and CLEANUP, read from the job manager's events journal.

flux-coral2's cray-slingshot jobtap plugin sees each job enter RUN and
CLEANUP inside the job manager. The bridge gets the same view without a
plugin, from the ``job-manager.events-journal`` streaming RPC (what
``flux.job.JournalConsumer`` reads): one response per posted event, the
job's jobspec with its ``submit`` event and its R with ``alloc``; a
consumer that starts late first gets every active job's events so far,
then a sentinel (id -1).

:class:`JobStates` turns them into ``job-state`` hook calls:

* ``alloc`` — the job entered RUN (Flux holds it in the job-manager prolog,
  ``coral2-pipeline flux-prolog``, until the pipeline releases it);
* ``finish``, or an ``exception`` of severity 0 after ``alloc`` and before
  ``start`` — it entered CLEANUP (a job that never ran has nothing on its
  nodes; one whose tasks run reaches CLEANUP only with its ``finish``, however
  long after a fatal exception that comes);
* ``clean`` — it is gone; forget it;
* an ``exception`` of type ``dws-epilog`` on a ``#DW`` job — dws-jobtap gave its
  DWS epilog up ("Failed to send dws.post_run RPC": nothing served ``dws`` when
  the job finished, as when it ends while the bridge is down or Flux restarts):
  ``epilog-lost``, so the pipeline moves the Workflow on as ``dws.post_run``
  would, sending no ``epilog-remove``;
* the sentinel — the backlog of active jobs is read: a job the pipeline still
  holds VNIs for that is not among them ended while nobody read the journal
  (the bridge was down), and is reported at CLEANUP now; a ``#DW`` job whose
  epilog the pipeline still holds that is not among them is looked up in its
  eventlog, and reported ``epilog-lost`` if dws-jobtap gave its epilog up.

A report the pipeline cannot take (Redis unreachable) stays pending and is
sent again by :meth:`JobStates.flush`; duplicates are harmless, since the
tasks behind the hook are idempotent.

When Redis has restarted or lost its data (:meth:`pipeline.store.Store.generation`
changed: its ``run_id``, or the store's epoch key), what it holds may be older than what
Flux holds — a crash of its host loses its last second of writes, a total loss all of
them — so the bridge sends again everything Flux still waits on: the DWS requests whose
wait has not ended (:mod:`pipeline.services.bridge.owed`), the RUN of every job the
job-manager prolog still holds and the CLEANUP of every job not yet clean — after, first,
the VNIs of every job whose ``cray-slingshot`` event gave them (``job.restore``), so that
no job is given a VNI another job holds and every job's CLEANUP frees its own.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.errors import FluxError, PipelineError
from pipeline.model.eventlog import EventlogEntry
from pipeline.services.bridge.owed import Owed
from pipeline.services.hooks import HookError, Hooks
from pipeline.store.fluxjobs import FluxJobs

log = logging.getLogger("coral2_pipeline.bridge")

SENTINEL = -1
#: How often the bridge asks whether Redis restarted or lost its data (s).
RESTART_CHECK_S = 1.0
#: the type of the exception dws-jobtap raises when it gives the DWS epilog up
DWS_EPILOG = "dws-epilog"


@dataclass
class _Job:
    userid: int | None = None  # from its submit event; never taken as root's
    dw: bool = False
    shell_options: dict[str, Any] = field(default_factory=dict)
    run: bool = False
    started: bool = False
    cleanup: bool = False
    run_report: dict[str, Any] | None = None  # the RUN report, sent again after a restart
    reservation: dict[str, Any] | None = None  # its cray-slingshot event's context


@dataclass
class JobStates:
    """Report RUN and CLEANUP of every job in the journal to ``hooks``."""

    hooks: Hooks
    #: the jobs the pipeline holds VNIs for: those not active once the backlog is read
    #: reached CLEANUP while nobody read the journal, and are reported now
    reserved: Callable[[], Iterable[int]] = lambda: ()
    #: where the jobs Flux runs are kept for the stale sweep (None: nowhere)
    view: FluxJobs | None = None
    #: the #DW jobs whose epilog the pipeline still holds (no Teardown asked yet), and a
    #: job's eventlog: those not active once the backlog is read may have ended while
    #: nobody served ``dws``
    held: Callable[[], Iterable[int]] = lambda: ()
    eventlog: Callable[[int], list[EventlogEntry]] | None = None
    #: Redis's generation (None: not known now); a change sends again what Flux waits on
    generation: Callable[[], str | None] | None = None
    jobs: dict[int, _Job] = field(default_factory=dict)
    pending: deque[dict[str, Any]] = field(default_factory=deque)
    caught_up: bool = False
    owed: Owed = field(default_factory=Owed)
    _generation: str | None = None
    _checked: float = 0.0

    def feed(self, response: Mapping[str, Any]) -> None:
        """Take one journal response (``{"id", "events", "jobspec"?, "R"?}``)."""
        jobid = response.get("id")
        if jobid == SENTINEL:
            self.caught_up = True
            self._view({"view": "synced", "active": sorted(self.jobs)})
            for missed in sorted(set(self.reserved()) - set(self.jobs)):
                self.pending.append({"jobid": missed, "state": "cleanup"})
            for missed in sorted(set(self.held()) - set(self.jobs)):
                self._epilog_lost_while_away(missed)
            self.flush()
            return
        if not isinstance(jobid, int) or jobid < 0:
            log.warning("events journal: response without a job id ignored: %r", response)
            return
        for event in response.get("events") or []:
            if isinstance(event, Mapping):
                self._event(jobid, event, response)
                self.owed.event(jobid, event, response)
        self.flush()

    def _event(self, jobid: int, event: Mapping[str, Any], response: Mapping[str, Any]) -> None:
        name = event.get("name")
        context = event.get("context") or {}
        job = self.jobs.get(jobid)
        if job is None:
            job = self.jobs[jobid] = _Job()
            self._view({"view": "active", "jobid": jobid})
        if name == "submit":
            userid = context.get("userid")
            job.userid = (
                userid if isinstance(userid, int) and not isinstance(userid, bool) else None
            )
            system = ((response.get("jobspec") or {}).get("attributes") or {}).get("system") or {}
            job.dw = "dw" in system
            job.shell_options = dict((system.get("shell") or {}).get("options") or {})
        elif name == "alloc" and not job.run:
            job.run = True
            job.run_report = {
                "jobid": jobid,
                "state": "run",
                "userid": job.userid,
                "R": response.get("R"),
                "shell_options": job.shell_options,
                "dw": job.dw,
            }
            self.pending.append(job.run_report)
        elif name == "start":
            job.started = True
        elif name == "cray-slingshot" and isinstance(context, Mapping):
            job.reservation = dict(context)
        elif (name == "finish" or (name == "exception" and self._ends_now(job, context))) and (
            job.run and not job.cleanup
        ):
            job.cleanup = True
            self.pending.append({"jobid": jobid, "state": "cleanup"})
        if name == "exception" and context.get("type") == DWS_EPILOG and job.dw:
            self.pending.append(
                {"jobid": jobid, "state": "epilog-lost", "run_started": job.started}
            )
        elif name == "clean":
            self.jobs.pop(jobid, None)
            self._view({"view": "inactive", "jobid": jobid})

    def _epilog_lost_while_away(self, jobid: int) -> None:
        """Report ``epilog-lost`` for inactive ``jobid`` if its eventlog shows that
        dws-jobtap gave its DWS epilog up."""
        if self.eventlog is None:
            return
        try:
            events = self.eventlog(jobid)
        except FluxError as exc:  # purged, or Flux never had it: the stale sweep's
            log.info("job %s: no eventlog to tell how its epilog ended: %s", jobid, exc)
            return
        lost = any(
            e.name == "exception" and (e.context or {}).get("type") == DWS_EPILOG for e in events
        )
        if lost:
            started = any(e.name == "start" for e in events)
            self.pending.append({"jobid": jobid, "state": "epilog-lost", "run_started": started})

    @staticmethod
    def _ends_now(job: _Job, context: Mapping[str, Any]) -> bool:
        """Whether an exception moves the job to CLEANUP now: a fatal one before its tasks
        started. One after that kills the tasks, and the job reaches CLEANUP with its
        ``finish`` — which may come long after (a node slow to kill them): its node work
        waits for it, as flux-coral2's epilog waits for ``finish``."""
        return context.get("severity") == 0 and not job.started

    def _view(self, report: dict[str, Any]) -> None:
        """Queue a change of the Flux job view, in order with the reports."""
        if self.view is not None:
            self.pending.append(report)

    def _note(self, report: Mapping[str, Any]) -> None:
        assert self.view is not None
        now = time.time()
        if report["view"] == "synced":
            self.view.synced(report["active"], now)
        elif report["view"] == "active":
            self.view.active(report["jobid"])
        else:
            self.view.inactive(report["jobid"], now)

    def _restarted(self) -> bool:
        """Whether Redis restarted or lost its data since the last look (at most every
        :data:`RESTART_CHECK_S`)."""
        now = time.monotonic()
        if self.generation is None or now - self._checked < RESTART_CHECK_S:
            return False
        self._checked = now
        try:
            current = self.generation()
        except PipelineError:
            return False
        if current is None:
            return False
        before, self._generation = self._generation, current
        return before is not None and before != current

    def _send_again(self) -> None:
        """Queue again everything Flux still waits on (the module's docstring)."""
        requests = self.owed.requests()
        restores = [
            {
                **job.run_report,
                "state": "restore",
                "run_started": job.started,
                "vnis": list(job.reservation.get("vnis") or []),
                "reason": str(job.reservation.get("empty-reason") or ""),
            }
            for job in self.jobs.values()
            if job.run_report is not None and job.reservation is not None
        ]
        held = [j.run_report for j in self.jobs.values() if j.run_report and not j.started]
        held = [r for r in held if not self.jobs[r["jobid"]].cleanup]
        cleaning = [jobid for jobid, j in self.jobs.items() if j.cleanup]
        log.warning(
            "Redis restarted or lost its data: what it holds may be older than Flux; "
            "holding again the VNIs of %d jobs, sending again %d DWS requests Flux waits "
            "on, %d jobs held in their prolog, %d jobs in CLEANUP",
            len(restores), len(requests), len(held), len(cleaning),
        )  # fmt: skip
        self.pending.extend(restores)  # first: no job may be given a VNI another holds
        self.pending.extend({"dws": topic, "payload": payload} for topic, payload in requests)
        self.pending.extend(held)
        self.pending.extend({"jobid": jobid, "state": "cleanup"} for jobid in sorted(cleaning))

    def flush(self) -> int:
        """Send the pending reports in order; return how many are left (Redis down)."""
        if self._restarted():
            self._send_again()
        while self.pending:
            report = self.pending[0]
            try:
                if "view" in report:
                    self._note(report)
                elif "dws" in report:
                    answer = self.hooks.dispatch_once(report["dws"], report["payload"])
                    if not answer.get("success"):
                        log.warning("%s again: %s", report["dws"], answer.get("errstr"))
                else:
                    self.hooks.job_state(report)
            except HookError as exc:
                log.error("job-state for job %s refused: %s", report.get("jobid"), exc)
            except PipelineError as exc:
                log.warning("job-state for job %s not sent yet: %s", report.get("jobid"), exc)
                break
            self.pending.popleft()
        return len(self.pending)

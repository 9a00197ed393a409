"""The simulated job manager's cray-slingshot behaviour: every job is reported at RUN and
CLEANUP, and held in the ``cray-slingshot`` prolog until the pipeline lets it start.

At RUN the job manager starts prolog ``cray-slingshot`` and sends ``job-state``
(``{"jobid", "state": "run", "userid", "R", "shell_options"}``) to the
pipeline; the pipeline answers through the outbox with the ``cray-slingshot``
event (``job-manager.coral2.event-post``) and, once every node has its CXI
services, the end of the prolog (``job-manager.coral2.prolog-finish``). At
CLEANUP it sends ``job-state`` ``cleanup`` and waits for nothing. A sev-0
exception during the prolog fails it, as Flux kills a running prolog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipeline.errors import FluxError

if TYPE_CHECKING:
    from pipeline.sim.flux.jobmanager import FluxJob, JobManager, Service

HOLD = "cray-slingshot"


class SlingshotJobtap:
    """What the job manager does for Slingshot (see the module docstring)."""

    def __init__(self, jm: JobManager, service: Service | None) -> None:
        self.jm = jm
        self.service = service

    def _send(self, job: FluxJob, payload: dict[str, Any]) -> bool:
        if self.service is None:
            return False
        answer = self.service("job-state", payload)
        if not answer.get("success"):
            note = f"job-state RPC failed: {answer.get('errstr') or 'no answer'}"
            self.jm.raise_exception(job.id, "cray-slingshot", 0, note)
            return False
        return True

    def run(self, job: FluxJob) -> None:
        """``job.state.run``: hold the job and report it with its R and shell options."""
        if job.fatal or self.service is None:
            return
        job.prologs[HOLD] = None
        self.jm.post(job, "prolog-start", {"description": HOLD})
        options = ((job.jobspec.get("attributes") or {}).get("system") or {}).get("shell", {})
        payload = {
            "jobid": job.id,
            "state": "run",
            "userid": job.userid,
            "R": job.kvs["R"],
            "shell_options": dict((options or {}).get("options") or {}),
        }
        if not self._send(job, payload):
            self.jm.prolog_finish(job, HOLD, 1)

    def cleanup(self, job: FluxJob) -> None:
        """``job.state.cleanup``: report it; nothing waits for the answer."""
        if self.service is not None and "R" in job.kvs:
            self._send(job, {"jobid": job.id, "state": "cleanup"})

    def exception(self, job: FluxJob) -> None:
        """A sev-0 exception while the job is held fails the prolog."""
        if HOLD in job.prologs:
            self.jm.prolog_finish(job, HOLD, 1)

    def serve(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        """``job-manager.coral2.<name>``: ``event-post`` and ``prolog-finish``."""
        job = self.jm.jobs.get(payload.get("id", -1))
        if job is None:
            raise FluxError("job not found")
        if name == "event-post":
            self.jm.post(job, str(payload["name"]), dict(payload.get("context") or {}))
        elif name == "prolog-finish":
            if payload.get("name") != HOLD:
                raise FluxError(f"no prolog {payload.get('name')!r} to finish")
            self.jm.prolog_finish(job, HOLD, int(payload.get("status", 0)))
        else:
            raise FluxError(f"job-manager.coral2.{name}: Function not implemented")
        return {}

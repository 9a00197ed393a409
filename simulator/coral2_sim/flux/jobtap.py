"""The ``dws-jobtap.so`` plugin's behaviour inside the simulated job manager.

Callbacks mirror the plugin's: ``job.state.depend`` (dependency ``dws-create``
and ``dws.create``), ``job.state.run`` (prolog ``dws-setup`` and
``dws.setup`` with R), ``finish`` / CLEANUP (epilog ``dws-epilog`` and
``dws.post_run``), sev-0 exceptions (finish the prolog, or send
``dws.teardown`` / ``dws.abort``), the ``epilog-timeout``; and the
``job-manager.dws.*`` service (``resource-update``, ``prolog-remove``,
``epilog-remove``) with the plugin's error strings.
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING, Any

from pipeline.errors import FluxError

if TYPE_CHECKING:
    from coral2_sim.flux.job import FluxJob
from coral2_sim.flux.jobmanager import JobManager, Service

log = logging.getLogger("coral2_coral2_sim.jobtap")

FAILED = "DWS workflow interactions failed"
NOT_LOADED = "dws.{} RPC could not be sent. Admins: is the flux-coral2-dws service loaded?"
#: dws-jobtap's words when a request's answer cannot be read (nothing serves dws, or the
#: answer is malformed), by request
UNANSWERED = {
    "create": "Failed to unpack dws.create RPC",
    "setup": "Failed to unpack dws.setup RPC",
    "post_run": "Failed to send dws.post_run RPC",
}
#: what dws-jobtap says for a failure answer without an errstr
NO_ERRSTR = "<no error string provided>"


class DwsJobtap:
    """The plugin, bound to one job manager and one ``dws.*`` service."""

    def __init__(self, jm: JobManager, service: Service | None, *, epilog_timeout_s: float) -> None:
        self.jm = jm
        self.service = service
        self.epilog_timeout_s = epilog_timeout_s

    # --- sending dws.* requests ------------------------------------------------------------
    def _send(self, job: FluxJob, name: str, payload: dict[str, Any], exc_type: str) -> bool:
        """Send ``dws.<name>``; on failure raise the plugin's exception, in its words for
        that request; return success."""
        if self.service is None:  # ENOSYS: nothing serves dws
            note = NOT_LOADED.format(name) if name == "create" else UNANSWERED[name]
            self.jm.raise_exception(job.id, exc_type, 0, f"{FAILED}: {note}")
            return False
        answer = self.service(f"dws.{name}", payload)
        if not isinstance(answer, dict) or not isinstance(answer.get("success"), bool):
            self.jm.raise_exception(job.id, exc_type, 0, f"{FAILED}: {UNANSWERED[name]}")
            return False
        if not answer["success"]:
            errstr = answer.get("errstr")
            if not errstr:  # dws.post_run's callback passes the missing errstr on
                errstr = NO_ERRSTR if name == "post_run" else f"dws.{name} RPC returned failure"
            self.jm.raise_exception(job.id, exc_type, 0, f"{FAILED}: {errstr}")
            return False
        return True

    # --- job callbacks ---------------------------------------------------------------------
    def depend(self, job: FluxJob) -> None:
        """``job.state.depend``: hold DW jobs on ``dws-create`` and send ``dws.create``."""
        if not job.dw:
            return
        tolerance = job.system.get("dw_failure_tolerance", 0)
        if not isinstance(tolerance, int) or isinstance(tolerance, bool):
            self.jm.raise_exception(job.id, "dws", 0, "jobtap plugin failed to unpack args")
            return
        job.dependencies.add("dws-create")
        self.jm.post(job, "dependency-add", {"description": "dws-create"})
        payload = {
            "dw_directives": job.system["dw"],
            "jobid": job.id,
            "resources": job.jobspec["resources"],
            "userid": job.userid,
            "failure_tolerance": tolerance,
        }
        job.aux["subscriptions"] = 1  # job.event.* callbacks, once per subscription
        self._send(job, "create", payload, "dws-create")

    def run(self, job: FluxJob) -> None:
        """``job.state.run``: start prolog ``dws-setup`` and send ``dws.setup`` with R."""
        if not job.dw or job.fatal:
            return
        # dws-jobtap subscribes to the job's events again here ("in case the plugin was
        # reloaded"): from now on each event reaches its callbacks twice
        job.aux["subscriptions"] = job.aux.get("subscriptions", 0) + 1
        job.aux["dws_prolog_active"] = True
        job.prologs["dws-setup"] = None
        self.jm.post(job, "prolog-start", {"description": "dws-setup"})
        if not self._send(job, "setup", {"jobid": job.id, "R": job.kvs["R"]}, "dws-setup"):
            self.jm.prolog_finish(job, "dws-setup", 1)

    def finish(self, job: FluxJob) -> None:
        """``finish`` event: start the epilog with ``run_started=true``."""
        if job.dw and not job.aux.get("dws_epilog_active"):
            self._start_epilog(job, run_started=True)

    def cleanup(self, job: FluxJob) -> None:
        """CLEANUP without a ``start`` event: start the epilog with ``run_started=false``,
        even after ``dws.create`` failed (dws-jobtap 0.36's ``cleanup_cb``)."""
        if job.dw and not job.started and not job.aux.get("dws_epilog_active"):
            self._start_epilog(job, run_started=False)

    def _start_epilog(self, job: FluxJob, *, run_started: bool) -> None:
        job.aux["dws_epilog_active"] = True
        job.epilogs["dws-epilog"] = None
        self.jm.post(job, "epilog-start", {"description": "dws-epilog"})
        if self.epilog_timeout_s > 0:
            self.jm.later(self.epilog_timeout_s, lambda: self._epilog_timeout(job))
        payload = {"jobid": job.id, "run_started": run_started}
        if not self._send(job, "post_run", payload, "dws-epilog"):
            self.jm.epilog_finish(job, "dws-epilog", 1)

    def _epilog_timeout(self, job: FluxJob) -> None:
        if job.state == "CLEANUP" and "dws-epilog" in job.epilogs:
            self.jm.raise_exception(job.id, "dws-epilog-timeout", 0, "DWS epilog timed out")

    def exception(self, job: FluxJob, type_: str) -> None:
        """A sev-0 exception: fail the prolog, or tear down / abort from the epilog — once
        per subscription to the job's events, as ``exception_cb`` runs (its epilog mark is
        never cleared, so a job subscribed twice is sent ``dws.teardown`` twice)."""
        if not job.dw:
            return
        for _ in range(job.aux.get("subscriptions", 0)):
            if "dws-setup" in job.prologs:
                self.jm.prolog_finish(job, "dws-setup", 1)
            elif job.aux.get("dws_epilog_active"):
                if type_ == "dws-epilog-timeout":
                    self._fire_and_forget(job, "abort")
                    self.jm.epilog_finish(job, "dws-epilog", 1)
                else:
                    self._fire_and_forget(job, "teardown")

    def _fire_and_forget(self, job: FluxJob, name: str) -> None:
        if self.service is not None:
            self.service(f"dws.{name}", {"jobid": job.id})

    # --- the job-manager.dws.* service -----------------------------------------------------
    def serve(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Serve ``job-manager.dws.<name>``; raise FluxError with the plugin's text."""
        handlers = {
            "resource-update": (("id", "resources", "exclude"), self._resource_update),
            "prolog-remove": (("id", "variables"), self._prolog_remove),
            "epilog-remove": (("id",), self._epilog_remove),
        }
        if name not in handlers:
            raise FluxError(f"job-manager.dws.{name}: Function not implemented")
        required, handler = handlers[name]
        jobid = payload.get("id") if isinstance(payload, dict) else None
        if not isinstance(payload, dict) or any(k not in payload for k in required):
            errmsg = f"received malformed dws.{name} RPC"
            if isinstance(jobid, int) and jobid in self.jm.jobs:
                self.jm.raise_exception(jobid, "exception", 0, f"{FAILED}: {errmsg}")
            log.error(
                "%s, coral2_dws module and dws_jobtap plugin versions may be out of sync, "
                "Flux may need to be restarted",
                errmsg,
            )
            raise FluxError(errmsg)
        job = self.jm.jobs.get(payload["id"])
        handler(job, payload)
        return {}

    def _resource_update(self, job: FluxJob | None, payload: dict[str, Any]) -> None:
        if "errmsg" in payload and job is not None:
            self.jm.raise_exception(job.id, "dws", 0, f"{FAILED}: {payload['errmsg']}")
            return
        if job is None or job.state != "DEPEND":
            raise FluxError("job not found in depend state")
        system = job.system
        exclude = payload["exclude"]
        if exclude is not None:
            existing = system.get("constraints")
            constraints = exclude if not existing else {"and": [existing, exclude]}
            if system.get("allow_rabbits"):
                constraints = {"or": [{"properties": ["rabbit"]}, constraints]}
            system["constraints"] = constraints
        job.jobspec["resources"] = copy.deepcopy(payload["resources"])
        update: dict[str, Any] = {"resources": payload["resources"]}
        if exclude is not None:
            update["attributes.system.constraints"] = system["constraints"]
        self.jm.post(job, "jobspec-update", update)
        job.dependencies.discard("dws-create")
        self.jm.post(job, "dependency-remove", {"description": "dws-create"})

    def _prolog_remove(self, job: FluxJob | None, payload: dict[str, Any]) -> None:
        if job is None:
            raise FluxError("failed to post dws_environment event")
        self.jm.post(job, "dws_environment", {"variables": payload["variables"]})
        if not job.aux.get("dws_prolog_active"):
            log.error("dws_prolog_active aux not set for job %s", job.id)
        self.jm.prolog_finish(job, "dws-setup", 0)

    def _epilog_remove(self, job: FluxJob | None, payload: dict[str, Any]) -> None:
        if job is None or job.state != "CLEANUP":
            raise FluxError("job not found in CLEANUP state")
        self.jm.epilog_finish(job, "dws-epilog", 0)

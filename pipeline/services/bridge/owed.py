"""What Flux still waits on the pipeline for, job by job, read from the events journal.

dws-jobtap sends ``dws.create`` when a ``#DW`` job enters DEPEND, ``dws.setup`` when it
enters RUN and ``dws.post_run`` when it ends, and waits — on its ``dws-create``
dependency, its ``dws-setup`` prolog, its ``dws-epilog`` epilog — until the pipeline
acts. The bridge answered each once the pipeline took it (a ledger entry and a task
message in Redis). Should Redis lose writes — a crash of its host loses up to the last
second under ``appendfsync everysec``; a total loss loses everything — a request Flux had
its answer to may be gone with them, and its job would wait for good.

:class:`Owed` keeps, for every active job, the requests whose wait the journal has not
yet seen end (``dependency-remove``, ``prolog-finish``, ``epilog-finish``), with their
payloads as dws-jobtap built them (from the job's jobspec and R). When Redis comes back
from a restart, the bridge sends each again: every hook is idempotent, so one the
pipeline still had changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: what each wait's start and end are in the job's eventlog: (topic, start, end)
WAITS = (
    ("dws.create", ("dependency-add", "dws-create"), ("dependency-remove", "dws-create")),
    ("dws.setup", ("prolog-start", "dws-setup"), ("prolog-finish", "dws-setup")),
    ("dws.post_run", ("epilog-start", "dws-epilog"), ("epilog-finish", "dws-epilog")),
)


@dataclass
class _Job:
    create: dict[str, Any] | None = None  # the dws.create payload, from the submit event
    R: Any = None
    started: bool = False
    waiting: dict[str, dict[str, Any]] = field(default_factory=dict)  # topic → payload


@dataclass
class Owed:
    """The DWS requests each active job still waits on."""

    jobs: dict[int, _Job] = field(default_factory=dict)

    def event(self, jobid: int, event: Mapping[str, Any], response: Mapping[str, Any]) -> None:
        """Take one journal event of ``jobid`` (``response`` carries its jobspec and R)."""
        name = event.get("name")
        context = event.get("context") or {}
        if name == "clean":
            self.jobs.pop(jobid, None)
            return
        job = self.jobs.setdefault(jobid, _Job())
        if name == "submit":
            job.create = _create_payload(jobid, context, response.get("jobspec"))
        elif name == "alloc":
            job.R = response.get("R")
        elif name == "start":
            job.started = True
        elif name == "exception" and context.get("severity") == 0:
            job.waiting.pop("dws.create", None)  # a job that dies is not created again
        description = context.get("description")
        for topic, start, end in WAITS:
            if (name, description) == end:
                job.waiting.pop(topic, None)
            elif (name, description) == start and (payload := self._payload(jobid, topic, job)):
                job.waiting[topic] = payload

    @staticmethod
    def _payload(jobid: int, topic: str, job: _Job) -> dict[str, Any] | None:
        if topic == "dws.create":
            return job.create
        if topic == "dws.setup":
            return None if job.R is None else {"jobid": jobid, "R": job.R}
        return {"jobid": jobid, "run_started": job.started}

    def requests(self) -> list[tuple[str, dict[str, Any]]]:
        """Every request some job still waits on, by job and in its order of sending."""
        return [
            (topic, payload)
            for jobid in sorted(self.jobs)
            for topic, payload in self.jobs[jobid].waiting.items()
        ]


def _create_payload(jobid: int, context: Mapping[str, Any], jobspec: Any) -> dict[str, Any] | None:
    """``dws.create``'s payload as dws-jobtap builds it from the job's jobspec (None for a
    job without ``#DW``, or one whose jobspec it could not unpack either)."""
    if not isinstance(jobspec, Mapping):
        return None
    system = (jobspec.get("attributes") or {}).get("system") or {}
    if not isinstance(system, Mapping) or "dw" not in system:
        return None
    tolerance = system.get("dw_failure_tolerance", 0)
    userid = context.get("userid")
    if not isinstance(tolerance, int) or isinstance(tolerance, bool) or not isinstance(userid, int):
        return None
    return {
        "dw_directives": system["dw"],
        "jobid": jobid,
        "resources": jobspec.get("resources"),
        "userid": userid,
        "failure_tolerance": tolerance,
    }


__all__ = ["WAITS", "Owed"]

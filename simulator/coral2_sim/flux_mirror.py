"""The demo's view of a real Flux: what it reads of the simulated job manager, read from a
real instance (``coral2-pipeline demo --flux real``).

:class:`FluxMirror` answers as :class:`~coral2_sim.flux.jobmanager.JobManager` does for
the demo — ``jobs`` (each a :class:`FluxJob` with its eventlog, state, memo, exceptions),
``submit``, ``cancel``, ``wait_inactive``, ``rpc("resource.undrain")`` and ``resources``
(drains, ssd vertices up, free nodes) — by asking the instance: one ``flux python``
process streams the job manager's events journal into it, jobs are submitted with
``flux job submit``, and resources are read with ``flux resource`` and Fluxion's
``ion-resource find``. Each job runs :mod:`coral2_sim.flux.job_app` (what the simulated
job manager's jobs do: join a hardware collective when they have one, then run for their
runtime).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from coral2_sim.children import die_with_parent
from coral2_sim.flux.job import FluxJob
from coral2_sim.flux_real import RealFlux
from pipeline.model.eventlog import EventlogEntry
from pipeline.model.hostlist import expand_hostlist
from pipeline.model.rabbitmap import RabbitMapping

#: Streams the events journal (every job from its submit) as JSON lines on stdout.
JOURNAL = """
import json, sys, flux
h = flux.Flux()
f = h.rpc("job-manager.events-journal", {"full": True}, flags=flux.constants.FLUX_RPC_STREAMING)
try:
    while True:
        print(json.dumps(f.get()), flush=True)
        f.reset()
except OSError:  # the stream ended: the instance stops
    pass
"""

#: The state a job is in after each event (flux-core's job state machine, as the demo
#: reads it).
STATE_AFTER = {
    "validate": "DEPEND",
    "depend": "PRIORITY",
    "priority": "SCHED",
    "alloc": "RUN",
    "finish": "CLEANUP",
    "clean": "INACTIVE",
}


@dataclass
class MirrorResources:
    """Flux's resources as the demo reads them: drains, ssd vertices up, free nodes."""

    drained: dict[str, str] = field(default_factory=dict)
    ssd_up: dict[str, set[int]] = field(default_factory=dict)
    free: set[str] = field(default_factory=set)
    ssd_free: dict[str, int] = field(default_factory=dict)


class FluxMirror:
    """A real Flux instance, as the demo reads the simulated job manager."""

    def __init__(self, flux: RealFlux, mapping: RabbitMapping, chunks: int) -> None:
        self.flux = flux
        self.mapping = mapping
        self.chunks = chunks
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.jobs: dict[int, FluxJob] = {}
        self._reader: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FluxMirror:
        env = self.flux.instance_env()
        env["FLUX_URI"] = self.flux.uri
        argv = [str(self.flux.prefix / "bin" / "flux"), "python", "-c", JOURNAL]
        self._reader = subprocess.Popen(
            die_with_parent(argv), env=env, stdout=subprocess.PIPE, text=True
        )
        self._thread = threading.Thread(target=self._read, name="flux-journal", daemon=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        assert self._reader is not None and self._reader.stdout is not None
        for line in self._reader.stdout:
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            if answer.get("id", -1) < 0:
                continue
            with self.changed:
                job = self.jobs.setdefault(
                    answer["id"], FluxJob(answer["id"], 0, answer.get("jobspec") or {}, 0.0)
                )
                if answer.get("jobspec"):
                    job.jobspec = answer["jobspec"]
                for raw in answer.get("events", []):
                    self._apply(job, EventlogEntry.model_validate(raw))
                self.changed.notify_all()

    def _apply(self, job: FluxJob, event: EventlogEntry) -> None:
        job.eventlog.append(event)
        context = event.context or {}
        if event.name in STATE_AFTER and job.state != "INACTIVE":
            job.state = STATE_AFTER[event.name]
        if event.name == "submit":
            job.userid = int(context.get("userid", 0))
        elif event.name == "start":
            job.started = True
        elif event.name == "finish":
            job.finish_status = int(context.get("status", 0))
        elif event.name == "memo":
            job.memo.update(context)
        elif event.name == "exception":
            job.exceptions.append(dict(context))
            if context.get("severity") == 0 and job.state in ("DEPEND", "PRIORITY", "SCHED"):
                job.state = "CLEANUP"

    # --- what the demo calls -----------------------------------------------------------
    def submit(
        self,
        resources: list[dict[str, Any]],
        *,
        system: dict[str, Any] | None = None,
        userid: int = 0,
        runtime_s: float = 0.3,
    ) -> int:
        """Submit a job of ``resources`` with ``attributes.system`` ``system``; it runs
        :mod:`coral2_sim.flux.job_app` for ``runtime_s``. The instance owner submits
        (a test instance runs one user's jobs): ``userid`` is not used."""
        del userid
        command = [sys.executable, "-m", "coral2_sim.flux.job_app", f"{runtime_s:g}"]
        jobspec = {
            "version": 1,
            "resources": resources,
            "tasks": [{"command": command, "slot": "task", "count": {"per_slot": 1}}],
            "attributes": {
                "system": {
                    "duration": 0,  # as `flux submit` leaves it: the site default applies
                    "cwd": str(self.flux.workdir),
                    "environment": self.flux.instance_env(),
                    **(system or {}),
                }
            },
        }
        env = self.flux.instance_env()
        env["FLUX_URI"] = self.flux.uri
        done = subprocess.run(
            [str(self.flux.prefix / "bin" / "flux"), "job", "submit"],
            input=json.dumps(jobspec),
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        jobid = int(self.flux.flux("job", "id", "--to=dec", done.stdout.strip()).strip())
        with self.changed:
            self.changed.wait_for(lambda: jobid in self.jobs, 60)
            self.jobs.setdefault(jobid, FluxJob(jobid, 0, jobspec, runtime_s))
        return jobid

    def job(self, jobid: int) -> FluxJob:
        with self.lock:
            return self.jobs[jobid]

    def cancel(self, jobid: int) -> None:
        """``flux cancel``."""
        self.flux.flux("cancel", str(jobid), check=False)

    def wait_inactive(self, jobids: list[int], timeout_s: float) -> bool:
        """Wait until every job of ``jobids`` is INACTIVE; return whether they all are."""
        deadline = time.monotonic() + timeout_s
        with self.changed:
            return self.changed.wait_for(
                lambda: all(j in self.jobs and self.jobs[j].state == "INACTIVE" for j in jobids),
                max(0.0, deadline - time.monotonic()),
            )

    def rpc(self, topic: str, payload: dict[str, Any]) -> dict[str, Any]:
        """What the demo sends Flux itself: the operator's ``flux resource undrain``."""
        if topic != "resource.undrain":
            raise ValueError(f"the demo sends no {topic} to a real Flux")
        self.flux.flux("resource", "undrain", str(payload["targets"]))
        return {}

    @property
    def resources(self) -> MirrorResources:
        """Flux's resources now (``flux resource``, Fluxion's down ssd vertices)."""
        found = MirrorResources()
        drains = self.flux.flux("resource", "drain", "-no", "{nodelist}\t{reason}")
        for line in drains.splitlines():
            hosts, _, reason = line.partition("\t")
            for host in expand_hostlist(hosts.strip()):
                found.drained[host] = reason
        allocated = self.flux.flux("resource", "list", "-s", "allocated", "-no", "{nodelist}")
        busy = {h for part in allocated.split() for h in expand_hostlist(part)}
        found.free = set(self.mapping.computes) - busy
        down = json.loads(
            self.flux.flux("ion-resource", "find", "-q", "--format=jgf", "status=down") or "null"
        )
        paths = {
            v["metadata"]["paths"]["containment"]
            for v in (down or {}).get("graph", {}).get("nodes", [])
        }
        allocated_jgf = json.loads(
            self.flux.flux("ion-resource", "find", "-q", "--format=jgf", "sched-now=allocated")
            or "null"
        )
        held = {
            v["metadata"]["paths"]["containment"]
            for v in (allocated_jgf or {}).get("graph", {}).get("nodes", [])
            if v["metadata"]["type"] == "ssd"
        }
        for k, (rabbit, entry) in enumerate(self.mapping.rabbits.items()):
            base = f"/{self.flux.cluster}/chassis{k}/ssd"
            found.ssd_up[rabbit] = {i for i in range(self.chunks) if f"{base}{i}" not in paths}
            # what the demo's leak check compares with the capacity: all of it, unless
            # Fluxion still holds one of the rabbit's ssd vertices
            taken = any(path.startswith(base) for path in held)
            found.ssd_free[rabbit] = entry.capacity // 2**30 - (1 if taken else 0)
        return found

    def stop(self) -> None:
        if self._reader is not None and self._reader.poll() is None:
            self._reader.terminate()
            self._reader.wait(timeout=10)

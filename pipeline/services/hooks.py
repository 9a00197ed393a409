"""The entry points for Flux: one function per ``dws.*`` RPC of flux-coral2.

Each hook validates its payload completely — malformed directives,
persistent creation by a non-owner, a negative failure tolerance, bad
resources or R — **before** anything is created or enqueued (flux-coral2
creates the Workflow first and validates the tolerance after), then
enqueues exactly one task. Returning means "accepted"; results reach Flux
through the outbox. A refusal raises :class:`HookError` whose text is
flux-coral2's user-error message, for ``{"success": false, "errstr": ...}``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.errors import InputError, TemporaryError
from pipeline.model.dw_expansion import expand_directives
from pipeline.model.jobid import JobId
from pipeline.model.pydantic_errors import problems
from pipeline.model.resource_set import ResourceSet
from pipeline.settings import Settings
from pipeline.states.create_rules import CreateRules, check_create

Enqueue = Callable[[str, dict[str, Any]], None]


class HookError(InputError):
    """Raised when Flux's request is refused; the text goes back as ``errstr``."""


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class CreatePayload(_Payload):
    """``dws.create``."""

    jobid: JobId
    userid: int = Field(ge=0, le=2**32 - 1)
    dw_directives: Any
    resources: list[dict[str, Any]]
    failure_tolerance: int = 0


class SetupPayload(_Payload):
    """``dws.setup``."""

    jobid: JobId
    R: dict[str, Any]


class PostRunPayload(_Payload):
    """``dws.post_run``."""

    jobid: JobId
    run_started: bool


class JobPayload(_Payload):
    """``dws.teardown`` and ``dws.abort``."""

    jobid: JobId


class JobStatePayload(_Payload):
    """``job-state``: a job of any kind entered RUN or CLEANUP, or dws-jobtap gave a #DW
    job's epilog up (``epilog-lost``, with whether the job ran)."""

    jobid: JobId
    state: Literal["run", "cleanup", "epilog-lost", "restore"]
    run_started: bool = False
    #: ``restore``: the VNIs of the job's ``cray-slingshot`` event, and why it has none
    vnis: list[Annotated[int, Field(ge=0, le=65535)]] = Field(default_factory=list, max_length=4)
    reason: str = Field(default="", max_length=1000)
    #: required at RUN: a job without one is not taken as root's (uid 0)
    userid: int | None = Field(default=None, ge=0, le=2**32 - 1)
    R: dict[str, Any] | None = None
    shell_options: dict[str, Any] = Field(default_factory=dict)
    dw: bool = False


def _parse(model: type[_Payload], topic: str, payload: Mapping[str, Any]) -> Any:
    if not isinstance(payload, Mapping):
        raise HookError(f"malformed {topic} payload: expected an object, got {payload!r}")
    data = dict(payload)
    if (
        topic == "dws.create"
        and isinstance(data.get("failure_tolerance"), int)
        and data["failure_tolerance"] < 0
    ):
        raise HookError("dw_failure_tolerance must be a positive integer")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise HookError(f"malformed {topic} payload: " + "; ".join(problems(exc))) from exc


def _check_r(R: dict[str, Any]) -> None:
    """Refuse an invalid RFC 20 R with its error, before anything is enqueued."""
    try:
        ResourceSet.parse(R)
    except InputError as exc:
        raise HookError(str(exc)) from exc


#: How long a hook keeps trying while the pipeline cannot take it (Redis down), s.
RETRY_S = 30.0


def retry_delay(exc: TemporaryError) -> float:
    """How long to wait before trying a request again after ``exc`` (s)."""
    return min(0.2, max(0.01, exc.delay_s))


class Hooks:
    """The hooks of one deployment: its settings, the instance owner, and how to enqueue."""

    def __init__(
        self,
        settings: Settings,
        enqueue: Enqueue,
        *,
        owner_uid: int,
        retry_s: float = RETRY_S,
    ) -> None:
        self.settings = settings
        self.enqueue = enqueue
        self.owner_uid = owner_uid
        self.retry_s = retry_s

    def dws_create(self, payload: Mapping[str, Any]) -> None:
        """``dws.create``: sent by dws-jobtap when a job with ``#DW`` reaches DEPEND."""
        request: CreatePayload = _parse(CreatePayload, "dws.create", payload)
        rabbit = self.settings.rabbit
        try:
            limits = self.settings.pipeline.limits
            lines = expand_directives(
                request.dw_directives,
                rabbit.presets,
                max_count=limits.max_directives,
                max_bytes=limits.max_dw_bytes,
            )
            rules = CreateRules.of(self.settings, self.owner_uid)
            check_create(lines, request.userid, request.resources, request.failure_tolerance, rules)
        except InputError as exc:
            raise HookError(str(exc)) from exc
        self.enqueue(
            "dws.create",
            {
                "jobid": request.jobid,
                "userid": request.userid,
                "directives": lines,
                "resources": request.resources,
                "failure_tolerance": request.failure_tolerance,
            },
        )

    def dws_setup(self, payload: Mapping[str, Any]) -> None:
        """``dws.setup``: sent when the job reaches RUN (prolog ``dws-setup`` started)."""
        request: SetupPayload = _parse(SetupPayload, "dws.setup", payload)
        _check_r(request.R)
        self.enqueue("dws.setup", {"jobid": request.jobid, "R": request.R})

    def dws_post_run(self, payload: Mapping[str, Any]) -> None:
        """``dws.post_run``: sent on ``finish`` (run_started) or CLEANUP without a start."""
        request: PostRunPayload = _parse(PostRunPayload, "dws.post_run", payload)
        self.enqueue("dws.post_run", {"jobid": request.jobid, "run_started": request.run_started})

    def dws_teardown(self, payload: Mapping[str, Any]) -> None:
        """``dws.teardown``: sent on a fatal exception while the DWS epilog runs."""
        request: JobPayload = _parse(JobPayload, "dws.teardown", payload)
        self.enqueue("dws.teardown", {"jobid": request.jobid})

    def dws_abort(self, payload: Mapping[str, Any]) -> None:
        """``dws.abort``: sent on a ``dws-epilog-timeout`` exception."""
        request: JobPayload = _parse(JobPayload, "dws.abort", payload)
        self.enqueue("dws.abort", {"jobid": request.jobid})

    def job_state(self, payload: Mapping[str, Any]) -> None:
        """``job-state``: every job as it enters RUN (with its R, user, shell options and
        whether it has ``#DW``; Flux holds it in the job-manager prolog) and CLEANUP, as
        the cray-slingshot jobtap plugin sees them (the bridge reads them from the job
        manager's events journal)."""
        request: JobStatePayload = _parse(JobStatePayload, "job-state", payload)
        if request.state == "cleanup":
            self.enqueue("job.cleanup", {"jobid": request.jobid})
            return
        if request.state == "epilog-lost":
            self.enqueue(
                "dws.epilog_lost", {"jobid": request.jobid, "run_started": request.run_started}
            )
            return
        if request.R is None:
            raise HookError("malformed job-state payload: R: a job entering RUN needs its R")
        if request.userid is None:
            raise HookError("malformed job-state payload: userid: a job entering RUN needs it")
        _check_r(request.R)
        if request.state == "restore":
            restore = {"jobid": request.jobid, "userid": request.userid, "R": request.R}
            self.enqueue(
                "job.restore",
                {
                    **restore,
                    "vnis": request.vnis,
                    "reason": request.reason,
                    "dw": request.dw,
                    "started": request.run_started,
                },
            )
            return
        self.enqueue(
            "job.run",
            {
                "jobid": request.jobid,
                "userid": request.userid,
                "R": request.R,
                "option": request.shell_options.get("cray-slingshot"),
                # the hwcoll shell option's yes is 1 (`-o hwcoll`) or true, as the plugin's
                # integer read takes it: a word is no request
                "hwcoll": request.shell_options.get("hwcoll") in (1, True),
                "dw": request.dw,
            },
        )

    def dispatch(self, topic: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Serve one ``dws.*`` request as coral2_dws answers it, waiting up to ``retry_s``
        while the pipeline cannot take it (Redis restarting: the request is kept waiting,
        not lost; dws-jobtap ignores the answer to dws.teardown and dws.abort, and a lost
        one would hold the job's epilog for good). For a process that may block (the
        ``hook`` command); the bridge never does (:meth:`dispatch_once`)."""
        deadline = time.monotonic() + self.retry_s
        while True:
            try:
                return self.dispatch_once(topic, payload)
            except TemporaryError as exc:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(retry_delay(exc))

    def dispatch_once(self, topic: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`dispatch` without waiting: a :class:`TemporaryError` (Redis restarting) is
        raised for the caller to try again later (the bridge, on its reactor's timer)."""
        handlers = {
            "dws.create": self.dws_create,
            "dws.setup": self.dws_setup,
            "dws.post_run": self.dws_post_run,
            "dws.teardown": self.dws_teardown,
            "dws.abort": self.dws_abort,
            "job-state": self.job_state,
        }
        handler = handlers.get(topic)
        if handler is None:
            return {
                "success": False,
                "errstr": f"unknown topic {topic!r}; known: {sorted(handlers)}",
            }
        try:
            handler(payload)
        except HookError as exc:
            return {"success": False, "errstr": str(exc)}
        return {"success": True}

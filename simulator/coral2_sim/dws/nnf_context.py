"""Types shared by the simulated nnf driver's modules: faults, errors, the per-Workflow context."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pipeline.clients.k8s import DwsClient
from pipeline.errors import DirectiveError
from pipeline.model.directives import Directive, parse_directive

Severity = Literal["Minor", "Major", "Fatal"]
ErrorType = Literal["User", "WLM", "Internal"]
NNF_CLIENTMOUNT_FINALIZER = "nnf.cray.hpe.com/nnf_clientmount"


@dataclass(frozen=True)
class DriverFault:
    """Make the entry (``state``, ``index``) fail: Fatal → Error, Major → TransientCondition.

    With ``seconds`` the fault clears after that long in the state (a
    TransientCondition that recovers).
    """

    state: str
    index: int = 0
    severity: Severity = "Fatal"
    type: ErrorType = "Internal"
    message: str = "injected fault"
    seconds: float | None = None


#: the states a fault at random strikes in (Teardown always ends: it frees the rabbits)
STRUCK_STATES = ("Proposal", "Setup", "DataIn", "PreRun", "PostRun", "DataOut")


@dataclass(frozen=True)
class WorkflowFaults:
    """Faults at random for the chaos harness: a Workflow is struck with chance ``rate``
    (a draw from ``seed`` and its name, so a harness knows which without asking), in one
    of :data:`STRUCK_STATES`, either with a TransientCondition that clears after
    ``seconds`` or with an Error that stays."""

    rate: float
    seed: int
    seconds: float = 2.0

    def fault_for(self, name: str) -> DriverFault | None:
        """The fault that strikes Workflow ``name`` (None: it runs clean)."""
        digest = hashlib.sha256(f"{self.seed}:{name}".encode()).digest()
        if int.from_bytes(digest[:4], "big") / 2**32 >= self.rate:
            return None
        state = STRUCK_STATES[digest[4] % len(STRUCK_STATES)]
        if digest[5] % 2:
            return DriverFault(state, 0, "Fatal", "Internal", "injected fault (at random)")
        return DriverFault(
            state, 0, "Major", "Internal", "injected fault (at random)", seconds=self.seconds
        )


@dataclass
class Faults:
    """Every fault the simulated DWS side can show."""

    errors: list[DriverFault] = field(default_factory=list)
    at_random: WorkflowFaults | None = None
    hang_states: set[str] = field(default_factory=set)
    never_mount: set[str] = field(default_factory=set)
    never_unmount: set[str] = field(default_factory=set)
    #: rabbits whose storage never comes up in Setup (their NnfNodeStorages never ready)
    slow_rabbits: set[str] = field(default_factory=set)
    #: path prefixes whose copies the simulated nnf-dm fails (a Failed NnfDataMovement)
    failed_copies: set[str] = field(default_factory=set)


class Waiting(Exception):
    """The entry is not done yet; ``message`` is nnf's wait reason."""


class Failed(Exception):
    """The entry failed with a ResourceError."""

    def __init__(
        self, severity: Severity, kind: ErrorType, message: str, debug: str | None = None
    ) -> None:
        super().__init__(message)
        self.severity = severity
        self.kind = kind
        self.message = message
        #: the error's debug text when it differs from the user message (dws's
        #: ``ResourceErrorInfo.DebugMessage``)
        self.debug = debug


def error_fields(
    severity: Severity, kind: ErrorType, message: str, debug: str | None = None
) -> dict[str, Any]:
    """Driver entry fields for a ResourceError, as nnf-sos's ``handleWorkflowError`` writes
    them: the message from the user message, the error from the debug message when there
    is one (dws ``ResourceErrorInfo.GetUserMessage`` and ``Error``)."""
    status = {"Fatal": "Error", "Major": "TransientCondition", "Minor": "Running"}[severity]
    return {
        "status": status,
        "message": f"{kind} error: {message}",
        "error": f"{kind.lower()} error: {message if debug is None else debug}",
        "completed": False,
    }


@dataclass
class Context:
    """What the driver needs about one Workflow."""

    dws: DwsClient
    workflow: dict[str, Any]
    directives: list[Directive | None]
    faults: Faults
    state_started: float
    mount_agent: bool
    mount_timeout_s: float

    @property
    def name(self) -> str:
        """The Workflow name."""
        return str(self.workflow["metadata"]["name"])

    @property
    def uid(self) -> str:
        """The Workflow uid (mount paths are built from it)."""
        return str(self.workflow["metadata"].get("uid", "uid"))

    def mount_path(self, index: int) -> str:
        """nnf's default compute mount path for directive ``index``."""
        return f"/mnt/nnf/{self.uid}-{index}"


def parse_all(lines: list[str]) -> list[Directive | None]:
    """Parse each line, keeping None for lines the ruleset rejects."""
    out: list[Directive | None] = []
    for line in lines:
        try:
            out.append(parse_directive(line))
        except DirectiveError:
            out.append(None)
    return out


def micro_time() -> str:
    """A Kubernetes MicroTime for now."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --- per state ---------------------------------------------------------------

"""What a state function sees: the Workflow as just read, and what was fetched with it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class WorkflowState(StrEnum):
    """The DWS states, in order."""

    PROPOSAL = "Proposal"
    SETUP = "Setup"
    DATA_IN = "DataIn"
    PRE_RUN = "PreRun"
    POST_RUN = "PostRun"
    DATA_OUT = "DataOut"
    TEARDOWN = "Teardown"

    @property
    def next(self) -> WorkflowState:
        """The state after this one (Teardown stays Teardown)."""
        order = list(WorkflowState)
        return order[min(order.index(self) + 1, len(order) - 1)]


@dataclass(frozen=True)
class Snapshot:
    """A fresh read of the Workflow (never an event body) and its related objects.

    ``breakdowns`` are fetched when Proposal is complete, ``workflow_token``
    when PreRun is, ``datamovements`` when DataOut is.
    """

    workflow: dict[str, Any]
    breakdowns: tuple[dict[str, Any], ...] = ()
    workflow_token: str | None = None
    #: why the token was not read, when DWS's status names a Secret that is not the
    #: Workflow's own token (the job must not run without the token it asked for)
    token_refused: str | None = None
    datamovements: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    @property
    def spec(self) -> dict[str, Any]:
        """``spec``."""
        return dict(self.workflow.get("spec") or {})

    @property
    def status(self) -> dict[str, Any]:
        """``status``."""
        return dict(self.workflow.get("status") or {})

    @property
    def state(self) -> WorkflowState | None:
        """``status.state`` (None before the controller's first transition)."""
        value = self.status.get("state")
        return WorkflowState(value) if value in set(WorkflowState) else None

    @property
    def deleting(self) -> bool:
        """Someone asked Kubernetes to delete it (``metadata.deletionTimestamp``); Flux's
        finalizer holds it until the pipeline lets go."""
        return bool((self.workflow.get("metadata") or {}).get("deletionTimestamp"))

    def active(self, state: WorkflowState) -> bool:
        """``spec.desiredState == status.state == state``."""
        return self.spec.get("desiredState") == state and self.state == state

    def complete(self, state: WorkflowState) -> bool:
        """Active and ready."""
        return self.active(state) and bool(self.status.get("ready"))

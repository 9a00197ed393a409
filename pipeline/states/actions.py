"""The actions a state function may return; the observe task carries them out.

Each action is idempotent on its own (DESIGN.md §4): desiredState patches
are guarded by the expected current state, messages to Flux are sent once
per job and ``mark``, deletes count 404 as done.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Action:
    """Base of every action."""


@dataclass(frozen=True)
class PatchDesiredState(Action):
    """Move ``spec.desiredState`` from ``expected`` to ``desired`` (skipped if it moved on).

    ``expected=None``: from whatever state the Workflow is in (Teardown).
    """

    expected: str | None
    desired: str


@dataclass(frozen=True)
class SendOnce(Action):
    """Append one outbox message for the job, at most once per ``mark``."""

    kind: str
    payload: dict[str, Any]
    mark: str


@dataclass(frozen=True)
class PatchComputes(Action):
    """Fill the Workflow's Computes with ``hosts``."""

    hosts: tuple[str, ...]


@dataclass(frozen=True)
class RemoveFinalizer(Action):
    """Remove Flux's finalizer from the Workflow."""


@dataclass(frozen=True)
class DeleteWorkflow(Action):
    """Remove Flux's finalizer and delete the Workflow (404 is done)."""


@dataclass(frozen=True)
class UpdateJob(Action):
    """Set fields of the job record."""

    changes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ArmDeadline(Action):
    """Arm deadline ``kind`` at ``due`` (epoch seconds)."""

    kind: str
    due: float


@dataclass(frozen=True)
class DisarmDeadline(Action):
    """Disarm deadline ``kind``."""

    kind: str


def kvs_put(jobid: int, key: str, value: Any) -> SendOnce:
    """Put ``key`` in the job's KVS (once per key)."""
    return SendOnce("kvs-put", {"id": jobid, "key": key, "value": value}, f"kvs:{key}")


def exception(jobid: int, type_: str, severity: int, note: str, mark: str) -> SendOnce:
    """Raise a job exception (once per ``mark``)."""
    return SendOnce(
        "exception", {"id": jobid, "type": type_, "severity": severity, "note": note}, mark
    )


def timing(jobid: int, state: str, workflow: dict[str, Any]) -> list[Action]:
    """Save ``rabbit_<state>_timing`` from ``status.elapsedTimeLastState`` when present."""
    elapsed = (workflow.get("status") or {}).get("elapsedTimeLastState")
    if elapsed is None:
        return []
    return [kvs_put(jobid, f"rabbit_{state.lower()}_timing", elapsed)]

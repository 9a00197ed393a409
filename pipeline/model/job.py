"""The job record: what the pipeline keeps about a job that the Workflow cannot hold.

Pure model; the store (``pipeline/store/jobs.py``) keeps it as JSON in Redis
and the state functions (``pipeline/states``) read it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class JobRecord(BaseModel):
    """One job's record (flux-coral2's WorkflowInfo, persisted)."""

    model_config = ConfigDict(extra="forbid")

    jobid: int = Field(ge=0)
    userid: int | None = None
    workflow: str | None = None
    resources: list[dict[str, Any]] | None = Field(
        default=None, description="jobspec resources from dws.create (None after a lost create)"
    )
    failure_tolerance: int = Field(default=-1, description="-1 when unknown: every loss is fatal")
    hosts: list[str] = Field(default_factory=list, description="computes of R (dws.setup)")
    failed_nodes: list[str] = Field(default_factory=list, description="nodes lost so far")
    rabbits: list[str] = Field(default_factory=list)
    storages: list[dict[str, Any]] | None = Field(
        default=None,
        description="each DirectiveBreakdown's Servers reference and allocation sets, as the "
        "Proposal observe read them (dws.setup fills Servers from them; None: not read yet)",
    )
    timings: dict[str, float] = Field(default_factory=dict)
    state: str | None = None
    observed_at: float = Field(default=0.0, description="time of the last dws.observe (epoch s)")
    observed_rv: str = Field(default="", description="resourceVersion the last dws.observe read")
    toredown: bool = Field(default=False, description="Teardown was requested")
    deleted: bool = Field(default=False, description="the Workflow delete was requested")
    epilog_removed: bool = Field(default=False, description="no epilog-remove may be sent")
    tc_since: float | None = Field(default=None, description="first TransientCondition seen")
    tc_message: str = ""
    tc_prerun: bool = False
    deadlines: dict[str, str] = Field(
        default_factory=dict, description="armed deadline kind → token; others are stale"
    )
    version: int = 0

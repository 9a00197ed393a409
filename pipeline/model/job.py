"""The job record: what the pipeline keeps about a job that the Workflow cannot hold.

Pure model; the store (``pipeline/store/jobs.py``) keeps it as JSON in Redis
and the state functions (``pipeline/states``) read it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypedDict

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pipeline.model.hwcoll import Reservation
from pipeline.model.jobid import JobId


class Teardown(StrEnum):
    """How far the job's Workflow is on its way out (flux-coral2's ``toredown``, ``deleted``)."""

    NOT_ASKED = "not-asked"
    #: Teardown was asked for; observes only follow Teardown from now on
    ASKED = "asked"
    #: Teardown completed and the Workflow's delete was asked for (or it was gone): done
    DELETED = "deleted"


class Epilog(StrEnum):
    """Whether Flux's epilog waits for our ``epilog-remove`` (flux-coral2's ``epilog_removed``)."""

    HELD = "held"
    #: ``epilog-remove`` was sent
    RELEASED = "released"
    #: Flux gave the epilog up (``dws.abort`` after ``dws-epilog-timeout``): send nothing
    ABANDONED = "abandoned"
    #: ``epilog-remove`` was sent before Teardown completed (a partial success: the
    #: computes that kept their mounts drained); the job's rabbits are held until it does
    EARLY = "released-early"


class Slingshot(BaseModel):
    """The job's VNI reservation and where its CXI services stand, node by node."""

    model_config = ConfigDict(extra="forbid")

    vnis: list[int] = Field(default_factory=list)
    reason: str = Field(default="", description="why the reservation is empty")
    failed: bool = Field(default=False, description="the empty reservation failed the job")
    nodes: list[str] = Field(default_factory=list, description="nodes given CXI services")
    released: bool = Field(default=False, description="the VNIs went back to the pool")
    clean: list[str] = Field(default_factory=list, description="nodes whose services are gone")
    busy_since: dict[str, float] = Field(
        default_factory=dict, description="node → when its services were first found busy"
    )
    drained: list[str] = Field(default_factory=list, description="nodes drained for busy services")


class NodeWork(BaseModel):
    """The job's work on its compute nodes at RUN, which holds it in the job-manager prolog
    (the nodes' answers are counted in the store, not here):
    each node's prolog (CXI services, the clientmount service started for a ``#DW`` job or
    stopped for another), then, for a ``#DW`` job once PreRun is complete, the clientmount
    service stopped again (as flux-coral2's clientmount prolog does)."""

    model_config = ConfigDict(extra="forbid")

    nodes: list[str] = Field(default_factory=list, description="the job's computes")
    dw: bool = Field(default=False, description="a #DW job: stop clientmount after PreRun")
    since: float = Field(default=0.0, description="when the node prologs were sent (epoch s)")
    timeout_s: float = Field(default=300.0, description="how long the nodes have to answer")
    mounted: bool = Field(default=False, description="PreRun is complete (#DW jobs)")
    released: bool = Field(default=False, description="the job was let start")
    failed: str = Field(default="", description="why the job was failed instead")

    def waiting(self, ready: set[str], stopped: set[str]) -> list[str]:
        """Nodes the job still waits for, given those whose prolog ended (``ready``) and
        those that stopped clientmount after PreRun (``stopped``; the answers are
        counted in the store, ``pipeline.store.tally``)."""
        done = stopped if self.dw else ready
        return [n for n in self.nodes if n not in done]


class DeadlineKind(StrEnum):
    """The kinds of deadline armed on a job (each has its handler in ``pipeline.tasks``)."""

    SETUP = "setup_timeout"  # Setup not complete in rabbit.setup_timeout
    PRERUN = "prerun_timeout"  # PreRun not complete in rabbit.prerun_timeout
    POSTRUN = "postrun_timeout"  # PostRun not complete in rabbit.postrun_timeout
    TEARDOWN_AFTER = "teardown_after"  # a job's Workflow moved on to Teardown
    TC = "tc_timeout"  # a TransientCondition outlasted rabbit.tc_timeout
    NODE_PROLOG = "node_prolog"  # the nodes did not all answer in node-timeout
    DWS_ENVIRONMENT = "dws_environment"  # a #DW job's file systems were not mounted in time
    CXI_RETRY = "cxi_retry"  # send the CXI epilog again to the nodes whose services were busy


class JobRecord(BaseModel):
    """One job's record (flux-coral2's WorkflowInfo, persisted)."""

    model_config = ConfigDict(extra="forbid")

    jobid: JobId
    userid: int | None = None
    workflow: str | None = None
    resources: list[dict[str, Any]] | None = Field(
        default=None, description="jobspec resources from dws.create (None after a lost create)"
    )
    failure_tolerance: int = Field(default=-1, description="-1 when unknown: every loss is fatal")
    hosts: list[str] = Field(default_factory=list, description="computes of R (dws.setup)")
    persistent: list[str] = Field(
        default_factory=list,
        description="the persistent instances its persistentdw directives name (dws.create)",
    )
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
    slingshot: Slingshot | None = Field(
        default=None, description="the VNI reservation (None: the job has not reached RUN)"
    )
    hwcoll: Reservation | None = Field(
        default=None,
        description="the multicast reservation at the fabric manager (token included: "
        "never shown, see Reservation.redacted)",
    )
    hwcoll_off: str = Field(
        default="", description="why the job runs without hardware collectives ('': it has them)"
    )
    node_work: NodeWork | None = Field(
        default=None, description="the node prologs at RUN (None: none were sent)"
    )
    teardown: Teardown = Teardown.NOT_ASKED
    epilog: Epilog = Epilog.HELD
    tc_since: float | None = Field(default=None, description="first TransientCondition seen")
    tc_message: str = ""
    tc_prerun: bool = False
    deadlines: dict[str, str] = Field(
        default_factory=dict, description="armed deadline kind → token; others are stale"
    )
    version: int = 0

    @model_validator(mode="before")
    @classmethod
    def _from_flags(cls, data: Any) -> Any:
        """Read a record an earlier release wrote with flux-coral2's boolean flags."""
        if not isinstance(data, dict) or not {"toredown", "deleted", "epilog_removed"} & set(data):
            return data
        data = dict(data)
        toredown, deleted = data.pop("toredown", False), data.pop("deleted", False)
        if data.pop("epilog_removed", False):
            data.setdefault("epilog", Epilog.RELEASED)
        if deleted:
            data.setdefault("teardown", Teardown.DELETED)
        elif toredown:
            data.setdefault("teardown", Teardown.ASKED)
        return data

    @property
    def epilog_held(self) -> bool:
        """Whether Flux's epilog still waits for our ``epilog-remove``."""
        return self.epilog == Epilog.HELD


class JobChanges(TypedDict, total=False):
    """Fields of a :class:`JobRecord` an action sets (``UpdateJob``, ``MarkDone``): mypy
    checks each key and its value's type where an action is made, so a misspelled field
    is an error there, not a change silently dropped. Every field but ``jobid`` and
    ``version`` (a test holds it to the record's)."""

    userid: int | None
    workflow: str | None
    resources: list[dict[str, Any]] | None
    failure_tolerance: int
    hosts: list[str]
    persistent: list[str]
    failed_nodes: list[str]
    rabbits: list[str]
    storages: list[dict[str, Any]] | None
    timings: dict[str, float]
    state: str | None
    observed_at: float
    observed_rv: str
    slingshot: Slingshot | None
    hwcoll: Reservation | None
    hwcoll_off: str
    node_work: NodeWork | None
    teardown: Teardown
    epilog: Epilog
    tc_since: float | None
    tc_message: str
    tc_prerun: bool
    deadlines: dict[str, str]

"""``[pipeline]``: our own keys (broker, Redis, Kubernetes access, queues, limits, signing)."""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field, field_validator, model_validator

from pipeline.settings.bounded import Table

#: What a name pasted into Redis keys and ACL rules may hold: no glob, no space, no ':'.
PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]+")


_Table = Table


class QueueNames(_Table):
    """``[pipeline.queues]``: Celery queue names."""

    lifecycle: str = "lifecycle"
    timeouts: str = "timeouts"
    housekeeping: str = "housekeeping"
    node_prefix: str = Field(
        default="node.",
        description="node queues are <node_prefix><host> (letters, digits, '.', '_', '-')",
    )

    @field_validator("lifecycle", "timeouts", "housekeeping", "node_prefix")
    @classmethod
    def _plain(cls, value: str) -> str:
        # these names go into each role's Redis ACL rules: a '*', a space or a '~' there
        # would grant keys and commands to every node
        if not PLAIN_NAME.fullmatch(value):
            raise ValueError(
                f"{value!r} may hold only letters, digits, '.', '_' and '-' (it is part of "
                "Redis key names and ACL rules)"
            )
        return value


class Limits(_Table):
    """``[pipeline.limits]``: how much input the pipeline takes (more is refused, naming the
    limit); the defaults fit El Capitan (11,136 computes, 696 rabbits) with room to spare."""

    max_directives: int = Field(
        default=64, ge=1, le=100_000, description="#DW directives per job, presets expanded"
    )
    max_dw_bytes: int = Field(
        default=64 * 1024, ge=1024, description="bytes of #DW text per job, presets expanded"
    )
    max_payload_bytes: int = Field(
        default=16 * 1024 * 1024,
        ge=1024,
        description="bytes of a JSON file the command line reads (hook payloads, R, jobspec)",
    )


class PipelineSettings(_Table):
    """``[pipeline]``: our own keys."""

    broker_url: str = Field(
        default="redis://127.0.0.1:6379/0",
        description="Celery broker (redis://, rediss://, sentinel://)",
    )
    result_backend: str | None = Field(default=None, description="unset = broker_url")
    redis_url: str | None = Field(default=None, description="job store; unset = broker_url")
    key_prefix: str = Field(default="coral2", description="prefix of every Redis key we write")
    redis_username: str | None = Field(
        default=None, description="Redis ACL user of this process (with redis_password_file)"
    )
    redis_password_file: str | None = Field(
        default=None,
        description=(
            "file holding the Redis password alone (mode 0600); put into every Redis URL, "
            "which must then hold none"
        ),
    )
    observe_only: bool = Field(
        default=False,
        description="record Workflow observations without acting (shadow mode, raw demo)",
    )
    sentinel_master: str | None = Field(
        default=None, description="Sentinel master name for a sentinel:// broker_url"
    )
    kubeconfig: str | None = Field(default=None, description="unset = rabbit.kubeconfig")
    api_host: str | None = Field(
        default=None, description="Kubernetes API URL; overrides kubeconfig"
    )
    namespace: str = Field(default="default", description="namespace of Workflows")
    visibility_timeout: float = Field(
        default=3600.0,
        gt=0,
        description=(
            "ignored, and may be removed: the broker keeps no unacknowledged set any more; "
            "a dead worker's tasks are sent again by housekeeping.redeliver (resend_after). "
            "Accepted so that a configuration written for an older release still loads"
        ),
    )
    task_events: bool = Field(
        default=False,
        description=(
            "the management workers send task events (received, started, succeeded...) "
            "from start, for Flower (coral2-pipeline flower), which may not ask for them; "
            "costs the worker 10-20 % more CPU per job"
        ),
    )
    node_heartbeat: float = Field(
        default=30.0,
        ge=1.0,
        le=3600.0,
        description=(
            "seconds between two heartbeats of a node worker (one small write per node "
            "it serves); status and the exporter take a node worker with no heartbeat for "
            "three of them as not running"
        ),
    )
    resend_after: float = Field(
        default=120.0,
        gt=0,
        description=(
            "seconds a sent task may go without an outcome before housekeeping.redeliver "
            "sends it again (then after its age, so the sends double apart, at most "
            "resend_cap apart): how soon the tasks a killed worker had taken run again"
        ),
    )
    resend_cap: float = Field(
        default=3600.0,
        gt=0,
        description=(
            "the longest wait in seconds between two sends of a task still without an "
            "outcome; lower it to recover sooner from messages lost to repeated worker "
            "kills, at the cost of more duplicates of messages that are only slow"
        ),
    )
    retention: float = Field(
        default=7 * 24 * 3600.0,
        gt=0,
        description=(
            "seconds a finished job's record and one-shot marks stay in Redis after its "
            "Workflow is gone (getrabbit, late duplicate hooks)"
        ),
    )
    queues: QueueNames = Field(default_factory=QueueNames)
    limits: Limits = Field(default_factory=Limits)
    beat_lease: float = Field(
        default=10.0,
        ge=1.0,
        le=600.0,
        description=(
            "seconds a beat holds its lease without renewing it: a standby beat takes over "
            "that long after the active one dies or freezes"
        ),
    )
    clientmount: bool = Field(
        default=False,
        description=(
            "node workers run the clientmount service of every job at RUN and CLEANUP "
            "(stopped for a job without #DW, started until PreRun completes for one with)"
        ),
    )
    log_node_messages: bool = Field(
        default=False,
        description=(
            "log each node message at INFO (logger coral2_pipeline.nodework), whatever the "
            "process's log level: each sent to a node, taken and answered there, and each "
            "answer counted, by job and node"
        ),
    )
    send_chunk: int = Field(
        default=1000,
        ge=1,
        description=(
            "a job's node messages are sent this many at a time by one task: past it, the "
            "rest go out as job.send_nodes tasks that every lifecycle worker process shares"
        ),
    )
    node_timeout: float = Field(
        default=300.0,
        gt=0,
        description=(
            "seconds a job held at RUN waits for each node worker's answer before it "
            "fails with an exception naming the silent nodes"
        ),
    )
    owner_uid: int | None = Field(
        default=None, description="instance owner uid; unset = uid of the service"
    )
    cxi_epilog_wait: float = Field(
        default=5.0,
        ge=0,
        description="seconds a node epilog retries destroying CXI services still busy (EBUSY)",
    )
    cxi_busy_retry: float = Field(
        default=10.0,
        gt=0,
        description="seconds between housekeeping's retries of a node's busy CXI services",
    )
    cxi_busy_timeout: float = Field(
        default=300.0,
        gt=0,
        description=(
            "seconds housekeeping retries a node's busy CXI services before it drains the "
            "node (its VNIs stay quarantined until `coral2-pipeline slingshot clean`)"
        ),
    )
    cluster_name: str | None = Field(
        default=None,
        description=(
            "the cluster name dws2jgf gave the resource graph (--cluster-name): rabbit ssd "
            "paths are /<cluster_name>/chassis<k>/ssd<i>; unset = dws2jgf's default, this "
            "host's name without digits"
        ),
    )
    chunks_per_nnf: int = Field(
        default=36,
        ge=1,
        description="ssd vertices per rabbit chassis in the resource graph (dws2jgf -c)",
    )
    partial_epilog: bool = Field(
        default=True,
        description=(
            "on postrun_timeout, drain the computes that kept their mounts and release the "
            "epilog for the rest at once, the job's rabbits held (ssds down) until Teardown "
            "completes; false: the whole job waits for Teardown, as flux-coral2 does"
        ),
    )
    drain_queues: list[str] = Field(
        default_factory=list,
        description=(
            "drain only computes with every one of these [resource] properties when their "
            "rabbit loses them (coral2_dws --drain-queues); empty = every compute"
        ),
    )
    stale_after: float = Field(
        default=600.0,
        ge=0,
        description=(
            "seconds a fluxjob-* Workflow may outlive its job's end in Flux (or, for a job "
            "Flux does not know, its own creation) before the stale sweep sends it to "
            "Teardown and deletes it; 0 = never sweep"
        ),
    )
    answers_per_minute: int = Field(
        default=1200,
        ge=10,
        le=1_000_000,
        description=(
            "entries the lifecycle worker takes from one node's answers stream in a minute; "
            "past it, the rest are deleted unread, one dead letter says so, and status "
            "names the node (a node answers once per task: a flood is a fault or an attack)"
        ),
    )
    answers_scan_every: float = Field(
        default=30.0,
        ge=1.0,
        le=3600.0,
        description=(
            "seconds between the answer reader's looks (a SCAN of the keyspace) for the "
            "streams of nodes it awaits no answer from, while it has answers to read (idle: "
            "every 5 s at most); an entry a node writes unasked waits up to this long"
        ),
    )
    answer_max_bytes: int = Field(
        default=64 * 1024,
        ge=4096,
        le=16 * 1024 * 1024,
        description=(
            "bytes of one entry on a node's answers stream; a larger one is set aside "
            "unread as a dead letter, and status names the node"
        ),
    )
    node_prologs: bool = Field(
        default=False,
        description=(
            "the site runs prolog.d/coral2-pipeline on every node of a job (a per-rank "
            "job-manager prolog): each verdict is written for each node of the job too, "
            "where that node's own Redis user alone may read it"
        ),
    )
    resource_eventlog_compact_at: int = Field(
        default=100_000,
        ge=100,
        description=(
            "events in the resource eventlog past which housekeeping compacts it (the "
            "drained set it replays to is kept exactly)"
        ),
    )
    security_key: str | None = Field(
        default=None,
        description="PEM private key this process signs task messages with (mode 0600); "
        "with the next two, only signed messages are run",
    )
    security_certificate: str | None = Field(
        default=None, description="PEM X.509 certificate of security_key"
    )
    security_cert_store: str | None = Field(
        default=None,
        description="directory of the PEM certificates whose signed messages this process runs",
    )
    security_node_cert_store: str | None = Field(
        default=None,
        description=(
            "management side: directory of the node workers' PEM certificates, one per "
            "node with its hostname as common name, each trusted only for that node's "
            "answers (job.prolog_done, job.clientmount_done, job.epilog_done)"
        ),
    )

    site_ca_certificate: str | None = Field(
        default=None,
        description=(
            "PEM certificate of the site CA that issues each node's key and certificate "
            "(coral2-pipeline node-cert); with it, the management side trusts only node "
            "certificates it issued"
        ),
    )
    site_ca_key: str | None = Field(
        default=None,
        description=(
            "PEM private key of the site CA (mode 0600), read only by coral2-pipeline "
            "node-cert on the host that issues node certificates"
        ),
    )

    #: Keys accepted so that an older release's configuration loads, and ignored.
    IGNORED: ClassVar[tuple[str, ...]] = ("visibility_timeout",)

    def ignored(self) -> list[str]:
        """The ignored keys (:data:`IGNORED`) this configuration sets."""
        return [name for name in self.IGNORED if name in self.model_fields_set]

    @model_validator(mode="after")
    def _resend(self) -> PipelineSettings:
        if self.resend_cap < self.resend_after:
            raise ValueError(
                f"resend_cap ({self.resend_cap:g} s) is shorter than resend_after "
                f"({self.resend_after:g} s): raise resend_cap or lower resend_after"
            )
        return self

    @model_validator(mode="after")
    def _signing(self) -> PipelineSettings:
        given = [
            name
            for name in ("security_key", "security_certificate", "security_cert_store")
            if getattr(self, name) is not None
        ]
        if given and len(given) != 3:
            raise ValueError(
                "message signing needs security_key, security_certificate and "
                f"security_cert_store together; only {', '.join(given)} is set"
            )
        if self.security_node_cert_store is not None and not given:
            raise ValueError(
                "security_node_cert_store needs message signing on: set security_key, "
                "security_certificate and security_cert_store too"
            )
        return self

    @field_validator("key_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if not PLAIN_NAME.fullmatch(value):
            raise ValueError(
                "key_prefix may hold only letters, digits, '.', '_' and '-' (it is part of "
                "every Redis key name and ACL rule)"
            )
        return value

"""The settings tables: one validated pydantic model per TOML table (see ``pipeline.settings``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from pipeline.errors import IdsetError
from pipeline.model.idset import decode_idset
from pipeline.model.slingshot import VALID_VNIS, VALID_VNIS_TEXT
from pipeline.settings.hwcoll import HwcollSettings

ENV_PREFIX = "CORAL2_PIPELINE_"
CONFIG_ENV = "CORAL2_PIPELINE_CONFIG"

#: Flux config tables that we accept and do not read.
FLUX_TABLES_IGNORED = frozenset(
    {
        "access", "archive", "bootstrap", "content", "cron", "exec", "heartbeat", "ingest",
        "job-ingest", "job-list", "job-manager", "kvs", "policy", "queues",
        "sched-fluxion-qmanager", "sched-fluxion-resource", "sched-simple", "systemd", "tbon",
        "general", "broker",
    }
)  # fmt: skip

_FSD = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ms|s|m|h|d)?\s*$")
_FSD_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_fsd(value: object) -> float:
    """Parse a Flux Standard Duration (``"30m"``, ``"1.5h"``, ``90``) into seconds."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration such as 1800 or '30m', got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        if value.strip() in ("inf", "infinity", "INF", "INFINITY"):
            return float("inf")
        match = _FSD.match(value)
        if match is None:
            raise ValueError(
                f"expected a duration such as 1800, '30m', '1.5h' or '2d', got {value!r}"
            )
        seconds = float(match.group(1)) * _FSD_UNITS[match.group(2)]
    else:
        raise ValueError(f"expected a duration such as 1800 or '30m', got {value!r}")
    if seconds < 0:
        raise ValueError(f"a duration cannot be negative, got {value!r}")
    return seconds


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Maximums(_Table):
    """``[rabbit.policy.maximums]``: per-node capacity limits in GiB (unset = no limit)."""

    xfs: int | None = Field(default=None, ge=0, description="GiB of xfs per node")
    gfs2: int | None = Field(default=None, ge=0, description="GiB of gfs2 per node")
    raw: int | None = Field(default=None, ge=0, description="GiB of raw per node")
    lustre: int | None = Field(default=None, ge=0, description="GiB of lustre per node")


class Policy(_Table):
    """``[rabbit.policy]``: must hold exactly a ``maximums`` table."""

    maximums: Maximums = Field(default_factory=Maximums)


class RabbitSettings(_Table):
    """``[rabbit]``: flux-config-rabbit(5), same keys, types and defaults as flux-coral2."""

    mapping: str | None = Field(
        default=None, description="path of the rabbitmapping JSON (getrabbit, dws2jgf)"
    )
    kubeconfig: str | None = Field(
        default=None, description="kubeconfig path; unset = $KUBECONFIG or ~/.kube/config"
    )
    tc_timeout: float = Field(
        default=10.0, ge=0, description="seconds a TransientCondition is tolerated"
    )
    drain_compute_nodes: bool = Field(
        default=True, description="drain computes whose rabbit access is not Ready"
    )
    soft_drain: bool = Field(
        default=True, description="with drain_compute_nodes=false: mark badrabbit instead"
    )
    save_datamovements: int = Field(
        default=0, description="nnfdatamovements saved to rabbit_datamovements (<=0: none)"
    )
    restrict_persistent_creation: bool = Field(
        default=True,
        validation_alias=AliasChoices("restrict_persistent_creation", "restrict_persistent"),
        description="only the instance owner may create_persistent (alias restrict_persistent)",
    )
    policy: Policy = Field(default_factory=Policy)
    presets: dict[str, str | list[str]] = Field(
        default_factory=dict, description="#DW presets: name → directive string or list"
    )
    setup_timeout: float = Field(default=0.0, ge=0, description="seconds for Setup; 0 = off")
    prerun_timeout: float = Field(default=0.0, ge=0, description="seconds for PreRun; 0 = off")
    postrun_timeout: float = Field(default=0.0, ge=0, description="seconds for PostRun; 0 = off")
    teardown_after: float = Field(
        default=0.0, ge=0, description="seconds after the job ran before Teardown is forced"
    )
    prolog_timeout: float = Field(
        default=1800.0, description="seconds (or FSD) the node prolog waits for the mounts"
    )
    epilog_timeout: float = Field(
        default=0.0, description="seconds for the DWS epilog (dws-jobtap epilog-timeout); <=0 off"
    )
    dws_api_version: str | None = Field(default=None, description="DWS version probed first")
    nnf_api_version: str | None = Field(default=None, description="NNF version probed first")
    allowed_daemons: list[str] = Field(
        default_factory=lambda: ["copy-offload"],
        description="daemons a #DW requires= may name at this site",
    )

    @model_validator(mode="before")
    @classmethod
    def _one_alias(cls, data: Any) -> Any:
        if (
            isinstance(data, Mapping)
            and "restrict_persistent" in data
            and "restrict_persistent_creation" in data
            and data["restrict_persistent"] != data["restrict_persistent_creation"]
        ):
            raise ValueError(
                "restrict_persistent and restrict_persistent_creation disagree; "
                "set only restrict_persistent_creation"
            )
        return data

    @field_validator("prolog_timeout", mode="before")
    @classmethod
    def _fsd(cls, value: object) -> float:
        return parse_fsd(value)

    @field_validator("presets")
    @classmethod
    def _presets(cls, value: dict[str, str | list[str]]) -> dict[str, str | list[str]]:
        for name in value:
            if not name.strip():
                raise ValueError("preset names must not be empty")
        return value


class SlingshotSettings(_Table):
    """``[cray-slingshot]``: the VNI pool and CXI switches of the cray-slingshot plugin."""

    vni_pool: str = Field(
        default="1024-65535", alias="vni-pool", description="RFC 22 idset of VNIs"
    )
    vnis_per_job: int = Field(default=1, alias="vnis-per-job", description="VNIs per job (0-4)")
    vni_reserve_fatal: bool = Field(
        default=True, alias="vni-reserve-fatal", description="reservation failure is fatal"
    )
    cxi_enable: bool = Field(
        default=False, alias="cxi-enable", description="create/destroy CXI services in perilogs"
    )

    @field_validator("vni_pool")
    @classmethod
    def _pool(cls, value: str) -> str:
        try:
            ids = decode_idset(value)
        except IdsetError as exc:
            raise ValueError(str(exc)) from exc
        bad = sorted(set(ids) - VALID_VNIS)
        if bad:
            raise ValueError(
                f"vni-pool {value!r} must be a subset of {VALID_VNIS_TEXT} (1 and 10 are "
                f"reserved for the default CXI service); offending VNIs start at {bad[0]}"
            )
        return value

    @field_validator("vnis_per_job")
    @classmethod
    def _per_job(cls, value: int) -> int:
        if not 0 <= value <= 4:
            raise ValueError("cray-slingshot.vnis-per-job value out of range (0-4)")
        return value


class QueueNames(_Table):
    """``[pipeline.queues]``: Celery queue names."""

    lifecycle: str = "lifecycle"
    timeouts: str = "timeouts"
    housekeeping: str = "housekeeping"
    node_prefix: str = Field(default="node.", description="node queues are <node_prefix><host>")


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
            "seconds before the broker hands a dead worker's unacknowledged task to another "
            "worker; keep it above the task time limit (300 s) in production"
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
    resend_after: float = Field(
        default=120.0,
        gt=0,
        description=(
            "seconds a sent task may go without an outcome before housekeeping.redeliver "
            "sends it again (then twice as long, at most an hour apart): the broker loses a "
            "message whose worker is killed between taking it and recording it"
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
        if not value or ":" in value or " " in value:
            raise ValueError("key_prefix must be non-empty without ':' or spaces")
        return value


class ResourceTable(_Table):
    """Flux's ``[resource]`` table (only ``config`` and ``exclude`` are read)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    config: list[dict[str, Any]] = Field(default_factory=list)
    exclude: str = ""


class Settings(BaseSettings):
    """Every setting of coral2-pipeline; see ``docs/configuration.md``."""

    model_config = SettingsConfigDict(extra="forbid", frozen=True)

    rabbit: RabbitSettings = Field(default_factory=RabbitSettings)
    cray_slingshot: SlingshotSettings = Field(
        default_factory=SlingshotSettings, alias="cray-slingshot"
    )
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings)
    resource: ResourceTable = Field(default_factory=ResourceTable)
    hwcoll: HwcollSettings = Field(default_factory=HwcollSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only the merged TOML + environment dict given by :func:`load_settings`."""
        return (init_settings,)

    @property
    def store_url(self) -> str:
        """Redis URL of the job store."""
        return self.pipeline.redis_url or self.pipeline.broker_url

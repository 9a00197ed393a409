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

from pipeline.errors import IdsetError
from pipeline.model.idset import decode_idset
from pipeline.model.slingshot import VALID_VNIS_TEXT, invalid_vnis
from pipeline.settings.bounded import Table
from pipeline.settings.hwcoll import HwcollSettings
from pipeline.settings.pipeline_table import PipelineSettings

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
        if value.strip().lower() in ("inf", "infinity"):
            raise ValueError(f"{value!r}: a duration here is finite; 0 waits for ever")
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


_Table = Table


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
        if not ids:  # every reservation would fail: a mistake, not a way to have no VNIs
            raise ValueError(
                "vni-pool is empty: name the VNIs the pool hands out (e.g. 1024-65535), or "
                "set vnis-per-job = 0 for jobs without VNIs"
            )
        bad = invalid_vnis(ids)
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


class ResourceTable(_Table):
    """Flux's ``[resource]`` table (only ``config`` and ``exclude`` are read)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    config: list[dict[str, Any]] = Field(default_factory=list)
    exclude: str = ""


class Settings(BaseModel):
    """Every setting of coral2-pipeline; see ``docs/configuration.md``.

    A plain model of the merged TOML and environment that :func:`load_settings` reads
    (its environment overrides are its own: they name every bad key), defaults checked
    as strictly as values given."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    rabbit: RabbitSettings = Field(default_factory=RabbitSettings)
    cray_slingshot: SlingshotSettings = Field(
        default_factory=SlingshotSettings, alias="cray-slingshot"
    )
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings)
    resource: ResourceTable = Field(default_factory=ResourceTable)
    hwcoll: HwcollSettings = Field(default_factory=HwcollSettings)

    @property
    def store_url(self) -> str:
        """Redis URL of the job store."""
        return self.pipeline.redis_url or self.pipeline.broker_url

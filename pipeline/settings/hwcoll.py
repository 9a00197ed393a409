"""``[hwcoll]``: multicast reservations for hardware collectives at the fabric manager."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipeline.settings.bounded import Table


class HwcollSettings(Table):
    """``[hwcoll]``: multicast reservations for hardware collectives at the fabric manager."""

    url: str | None = Field(
        default=None,
        description="fabric manager base URL (e.g. https://api-gw-service-nmn.local/apis/fm); "
        "unset = hardware collectives off",
    )
    auth: Literal["oauth", "basic", "none"] = Field(
        default="oauth",
        description="how to log in: OAuth client credentials, HTTP basic, or none",
    )
    auth_dir: str = Field(
        default="/etc/fmsim",
        description="directory of the credentials, each file mode 0600: endpoint, client-id, "
        "client-secret (oauth) or passwd (basic, user cxi)",
    )
    mtls_cert: str | None = Field(default=None, description="client certificate (PEM) for mTLS")
    mtls_key: str | None = Field(default=None, description="its private key (PEM, mode 0600)")
    ca: str | None = Field(
        default=None, description="CA bundle the fabric manager's certificate is checked with"
    )
    addresses_per_job: int | None = Field(
        default=None,
        ge=1,
        description="multicast addresses reserved per job; unset = HPE's formula from "
        "total_addresses, system_nodes, min_job_nodes and jobs_sharing",
    )
    total_addresses: int = Field(
        default=4086, ge=1, description="addresses for collectives fabric-wide (M)"
    )
    system_nodes: int | None = Field(
        default=None, ge=1, description="the system's size (S); unset = the computes mapped"
    )
    jobs_sharing: int = Field(default=1, ge=1, description="jobs expected to share a node (j)")
    min_job_nodes: int | None = Field(
        default=None,
        ge=1,
        description="jobs of at least this many nodes get a reservation; unset = only jobs "
        "run with -o hwcoll",
    )
    request_timeout: float = Field(
        default=2.0,
        gt=0,
        le=30,
        description="seconds one request may take; a reservation slower than this is "
        "skipped (the job runs without hardware collectives)",
    )
    cluster: str | None = Field(
        default=None,
        description="prefix of our reservations' ids (<cluster>-<jobid>); unset = "
        "pipeline.cluster_name, else the host name without digits",
    )
    release_retry: float = Field(
        default=10.0, gt=0, description="seconds between tries of a release the FM refused"
    )

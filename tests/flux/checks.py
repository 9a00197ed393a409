"""What each conformance check asks Flux: the requests and cases ``make record-flux``
sends to a real Flux (``tests/flux/record.py``) and the suite replays against the
simulated job manager. Plain data: importing it needs no Flux."""

from __future__ import annotations

from typing import Any

from pipeline.model.rabbitmap import RabbitMapping
from pipeline.services.bridge.delivery import translate
from pipeline.store.outbox import OutboxMessage

#: The brokers of a bare two-broker instance.
HOSTS = "compute[01-02]"
#: 4 computes behind 2 rabbits, 36 TiB each (the tier's cluster).
TIER_MAPPING = RabbitMapping.model_validate(
    {
        "computes": {f"compute0{i}": f"rabbit{(i + 1) // 2}" for i in range(1, 5)},
        "rabbits": {
            "rabbit1": {"capacity": 39582418599936, "hostlist": "compute[01-02]"},
            "rabbit2": {"capacity": 39582418599936, "hostlist": "compute[03-04]"},
        },
    }
)
#: The tier's Fluxion cluster name (coral2_sim.system.CLUSTER).
CLUSTER = "demo"

UNKNOWN = 12345
#: stands for the id of a job the instance holds in SCHED (urgency 0)
JOB = "$JOB"
SSD = f"/{CLUSTER}/chassis0/ssd0"
NODE = f"/{CLUSTER}/chassis0/compute01"
NOWHERE = f"/{CLUSTER}/nowhere"

#: Every request the bridge sends (pipeline.services.bridge.delivery.RPC_TOPICS), for a
#: job Flux does not know and for one it holds, and Fluxion's for vertices that exist and
#: that do not.
BRIDGE_REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("job-manager.memo", {"id": UNKNOWN, "memo": {"rabbits": "rabbit1"}}),
    ("job-manager.raise", {"id": UNKNOWN, "type": "dws", "severity": 0, "note": "n"}),
    ("job-manager.post-event.post", {"id": UNKNOWN, "name": "cray-slingshot", "context": {}}),
    ("job-manager.dws.resource-update", {"id": UNKNOWN, "resources": [], "exclude": ""}),
    ("job-manager.dws.prolog-remove", {"id": UNKNOWN, "variables": {}}),
    ("job-manager.dws.epilog-remove", {"id": UNKNOWN}),
    ("job-manager.memo", {"id": JOB, "memo": {"rabbits": "rabbit1"}}),
    ("job-manager.post-event.post", {"id": JOB, "name": "cray-slingshot", "context": {}}),
    ("job-manager.dws.resource-update", {"id": JOB, "resources": [], "exclude": ""}),
    ("job-manager.dws.prolog-remove", {"id": JOB, "variables": {}}),
    ("job-manager.dws.epilog-remove", {"id": JOB}),
    ("job-manager.raise", {"id": JOB, "type": "dws", "severity": 1, "note": "n"}),
    ("sched-fluxion-resource.set_status", {"resource_path": SSD, "status": "up"}),
    ("sched-fluxion-resource.set_status", {"resource_path": SSD, "status": "down"}),
    ("sched-fluxion-resource.set_status", {"resource_path": NOWHERE, "status": "up"}),
    ("sched-fluxion-resource.set_status", {"resource_path": SSD, "status": "sideways"}),
    ("sched-fluxion-resource.set_property", {"sp_resource_path": [NODE], "sp_keyval": "b=1"}),
    ("sched-fluxion-resource.set_property", {"sp_resource_path": [NOWHERE], "sp_keyval": "b=1"}),
    ("sched-fluxion-resource.remove_property", {"resource_path": [NODE], "key": "b"}),
    ("sched-fluxion-resource.remove_property", {"resource_path": [NOWHERE], "key": "b"}),
    ("sched-fluxion-resource.remove_property", {"resource_path": [NODE], "key": "never-set"}),
]

#: resource.drain and resource.undrain, what the bridge sends among them.
DRAIN_REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("resource.drain", {"targets": "compute01", "reason": "a"}),
    ("resource.drain", {"targets": "compute01", "reason": "b"}),
    ("resource.drain", {"targets": "compute01", "mode": None}),
    ("resource.drain", {"targets": "compute01", "mode": "force"}),
    ("resource.drain", {"targets": "compute01", "reason": "b", "mode": "update"}),
    ("resource.undrain", {"targets": "compute02"}),
    ("resource.undrain", {"targets": "compute01", "mode": "force"}),
    ("resource.undrain", {"targets": "compute02", "mode": "update"}),
    ("resource.undrain", {"targets": "compute01"}),
    ("resource.drain", {"targets": "compute[01-02]", "reason": "x", "mode": "overwrite"}),
    ("resource.undrain", {"targets": "compute[01-02]", "mode": None}),
    # what the bridge sends for an outbox undrain and drain
    translate(OutboxMessage("undrain", 0, {"targets": "compute[01-02]"}), lambda h: h),
    translate(OutboxMessage("undrain", 0, {"targets": "compute01"}), lambda h: h),
    translate(
        OutboxMessage("drain", 0, {"targets": "compute02", "mode": "update", "reason": "r"}),
        lambda h: h,
    ),
]

#: The resource journal's cap, and what is done before it is streamed.
JOURNAL_MAX = 4
JOURNAL_REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("resource.drain", {"targets": "compute01", "reason": "one"}),
    ("resource.undrain", {"targets": "compute01"}),
    ("resource.drain", {"targets": "compute02", "reason": "two"}),
    ("resource.drain", {"targets": "compute01", "reason": "three"}),
    ("resource.undrain", {"targets": "compute02"}),
    ("resource.undrain", {"targets": "compute01"}),
]

#: dws-jobtap.so's cases: no service, then each request answered in each way it can fail.
JOBTAP_CASES: list[dict[str, Any]] = [
    {"service": False},
    {"create": {"success": False, "errstr": "create refused"}},
    {"create": {"success": False}},
    {"create": {"succes": True}},
    {"setup": {"success": False, "errstr": "setup refused"}},
    {"setup": {"success": False}},
    {"post_run": {"success": False, "errstr": "post_run refused"}},
    {"post_run": {"success": False}},
    {},
]

#: perilog.so's cases: the prolog's exit status, or a cancel while it runs.
PERILOG_CASES: list[dict[str, Any]] = [
    {"exit": 0},
    {"exit": 3},
    {"exit": 137},
    {"cancel": True},
]

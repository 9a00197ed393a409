"""The simulated job manager answers every request the bridge sends as flux-core 0.88,
Fluxion 0.54 and flux-coral2's ``dws-jobtap.so`` answer it, refusals included, with the
same words: requests for a job Flux does not know (``job-manager.memo``, ``.raise``,
``.post-event.post``, ``job-manager.dws.*``), and Fluxion's status and property requests
for vertices that exist and that do not, or with a status that does not exist. Checked
side by side against a real instance configured as the tier's (the JGF of dws2jgf)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.sim.flux.jobmanager import JobManager
from pipeline.sim.flux_real import RealFlux
from pipeline.sim.system import CLUSTER
from tests.flux.conftest import TIER_MAPPING, simulated_answers

UNKNOWN = 12345
SSD = f"/{CLUSTER}/chassis0/ssd0"
NODE = f"/{CLUSTER}/chassis0/compute01"
NOWHERE = f"/{CLUSTER}/nowhere"
REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("job-manager.memo", {"id": UNKNOWN, "memo": {"rabbits": "rabbit1"}}),
    ("job-manager.raise", {"id": UNKNOWN, "type": "dws", "severity": 0, "note": "n"}),
    ("job-manager.post-event.post", {"id": UNKNOWN, "name": "cray-slingshot", "context": {}}),
    ("job-manager.dws.resource-update", {"id": UNKNOWN, "resources": [], "exclude": ""}),
    ("job-manager.dws.prolog-remove", {"id": UNKNOWN, "variables": {}}),
    ("job-manager.dws.epilog-remove", {"id": UNKNOWN}),
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


@pytest.fixture(scope="module")
def real(flux_prefix: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealFlux]:
    workdir = tmp_path_factory.mktemp("conformance")
    flux = RealFlux(flux_prefix, workdir, TIER_MAPPING, CLUSTER, dict(os.environ)).start()
    yield flux
    flux.stop()


def simulated() -> list[dict[str, Any]]:
    return simulated_answers(JobManager(TIER_MAPPING, ssd_chunks=4), REQUESTS)


def test_each_request_gets_the_same_answer_from_both(real: RealFlux, tmp_path: Path) -> None:
    path = tmp_path / "requests.json"
    path.write_text(json.dumps(REQUESTS))
    script = Path(__file__).with_name("rpc_answers.py")
    answers = json.loads(real.flux("python", str(script), str(path)))
    got = [{"error": a["error"]} if "error" in a else {"ok": None} for a in answers]
    assert got == simulated()
    assert any("error" in a for a in got) and any("ok" in a for a in got)

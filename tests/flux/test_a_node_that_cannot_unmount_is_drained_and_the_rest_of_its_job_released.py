"""On the real Flux, with ``pipeline.partial_epilog`` (the default): a compute of a
two-node job whose rabbit file system will not unmount outlasts ``postrun_timeout``. The
pipeline drains that compute in Flux with flux-coral2's reason and releases the job's
epilog (``epilog-remove``: the epilog ends well, not given up); flux-core keeps the
drained compute out of new jobs until the operator lifts the drain. Nothing is left."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from coral2_sim.node.agent import BUSY

from pipeline.clients.flux_site import FluxSite
from tests.flux.conftest import Tier, running_tier, signing_as
from tests.flux.test_a_node_that_cannot_unmount_is_drained_in_flux_until_undrained import (
    REASON,
    drained,
)

DW = "--setattr=system.dw=#DW jobdw type=xfs capacity=10GiB name=scratch"


@pytest.fixture(scope="module")
def impatient_module(
    flux_site: FluxSite, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Tier]:
    """The whole system around a real Flux, with a short ``postrun_timeout``."""
    workdir = tmp_path_factory.mktemp("partial-tier")
    with running_tier(
        flux_site, workdir, {"CORAL2_PIPELINE_RABBIT__POSTRUN_TIMEOUT": "15"}
    ) as tier:
        yield tier


@pytest.fixture
def impatient(impatient_module: Tier) -> Tier:
    return signing_as(impatient_module)


def test_the_stuck_compute_is_drained_and_the_job_released_before_teardown(
    impatient: Tier, tmp_path: Path
) -> None:
    tier = impatient
    gate = tmp_path / "gate"
    jobid = tier.submit("-N2", DW, "sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done")
    tier.flux.flux("job", "wait-event", "-t", "120", str(jobid), "start")
    nodes = tier.flux.flux("jobs", "-no", "{nodelist}", str(jobid)).strip()
    stuck = tier.flux.flux("hostlist", "-n", "0", nodes).strip()
    [environment] = [e for e in tier.events(jobid) if e["name"] == "dws_environment"]
    mount = environment["context"]["variables"]["DW_JOB_scratch"]
    busy = tier.system.workdir / "mnt" / stuck / mount.lstrip("/") / BUSY
    busy.touch()
    gate.touch()

    tier.wait_inactive(jobid, timeout_s=300)
    assert drained(tier).get(stuck) == REASON, drained(tier)
    [timeout] = [e["context"] for e in tier.events(jobid) if e["name"] == "exception"]
    assert timeout["type"] == "rabbit-timeout"
    [released] = [e["context"] for e in tier.events(jobid) if e["name"] == "epilog-finish"]
    assert released == {"description": "dws-epilog", "status": 0}
    assert stuck not in free(tier)  # flux-core keeps it out of new jobs

    busy.unlink()
    tier.flux.flux("resource", "undrain", stuck)
    assert stuck in free(tier)
    assert tier.settled() == []


def free(tier: Tier) -> list[str]:
    """The computes Flux would give a new job."""
    nodes = tier.flux.flux("resource", "list", "-s", "free", "-no", "{nodelist}").strip()
    return tier.flux.flux("hostlist", "-e", "-d", " ", nodes).split() if nodes else []

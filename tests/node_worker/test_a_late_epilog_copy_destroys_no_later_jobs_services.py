"""A copy of a job's node epilog that arrives after that epilog destroyed the job's CXI
services destroys nothing: by then the job's VNIs may have gone, out of quarantine, to a
later job of the same user on the same node, whose services carry the same user and VNIs.
The later job keeps its services; the copy is still answered."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from coral2_sim.node.cassini import SimulatedNic
from coral2_sim.node.service import SimulatedService

from node_worker.app import NodeWorker
from node_worker.ended import EndedJobs
from pipeline.settings import load_settings
from tests.node_worker.answers_of import answers
from tests.node_worker.test_a_late_prolog_copy_never_undoes_the_epilog import (
    job_services,
    run,
    worker,
)


@pytest.fixture
def queue() -> str:
    return f"late-epilog-{uuid.uuid4().hex[:8]}"


def test_a_late_epilog_copy_leaves_the_next_jobs_services(
    redis_url: str, queue: str, tmp_path: Path
) -> None:
    node, nic = worker(redis_url, queue, tmp_path)
    cxi = {"vnis": [1024], "ncores": 4}
    run(node, "node.prolog", jobid=7, userid=1001, clientmount=None, cxi=cxi)
    run(node, "node.epilog", jobid=7, userid=1001, clientmount=None, cxi={"vnis": [1024]})
    assert job_services(nic) == []
    # VNI 1024 left quarantine and went to job 8 of the same user, on the same node
    run(node, "node.prolog", jobid=8, userid=1001, clientmount=None, cxi=cxi)
    later = job_services(nic)
    assert later

    run(node, "node.epilog", jobid=7, userid=1001, clientmount=None, cxi={"vnis": [1024]})
    assert job_services(nic) == later
    assert [a["jobid"] for a in answers(redis_url, queue, "job.epilog_done")] == [7, 7]

    run(node, "node.epilog", jobid=8, userid=1001, clientmount=None, cxi={"vnis": [1024]})
    assert job_services(nic) == []


def test_an_epilog_rerun_after_busy_services_still_destroys_them(
    redis_url: str, queue: str, tmp_path: Path
) -> None:
    settings = load_settings(
        env={
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_url,
            "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": queue,
            "CORAL2_PIPELINE_PIPELINE__CXI_EPILOG_WAIT": "0",
        }
    )
    nic = SimulatedNic(devices=2, busy_s=3600.0)
    node = NodeWorker(
        settings, ["n1"], SimulatedService(), nic_of=lambda host: nic, ended=EndedJobs(tmp_path)
    )
    cxi = {"vnis": [1024], "ncores": 4}
    made = run(node, "node.prolog", jobid=9, userid=1001, clientmount=None, cxi=cxi)
    for device, service in made.items():
        nic.use(device, service)  # a process of the job still uses its services
    run(node, "node.epilog", jobid=9, userid=1001, clientmount=None, cxi={"vnis": [1024]})
    assert job_services(nic)
    for device, service in made.items():
        nic.release(device, service)
    run(node, "node.epilog", jobid=9, userid=1001, clientmount=None, cxi={"vnis": [1024]})
    assert job_services(nic) == []

"""A copy of a job's node prolog, or of its clientmount stop, that reaches the node after
the job's epilog — a redelivery after a killed worker, a resend by the ledger — changes
nothing there: the services stay destroyed, the clientmount service the epilog started
for the unmounts keeps running, and the node answers that it ignored the copy. The note
survives a restart of the node worker (its state directory)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from coral2_sim.node.cassini import SimulatedNic
from coral2_sim.node.service import SimulatedService

from node_worker.app import NodeWorker
from node_worker.ended import EndedJobs
from pipeline.errors import ConfigError
from pipeline.settings import load_settings
from tests.node_worker.answers_of import answers


@pytest.fixture
def queue() -> str:
    return f"late-{uuid.uuid4().hex[:8]}"


def worker(redis_url: str, queue: str, state: Path) -> tuple[NodeWorker, SimulatedNic]:
    settings = load_settings(
        env={
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_url,
            "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": queue,  # answers land under it, unread
        }
    )
    nic = SimulatedNic(devices=2)
    node = NodeWorker(
        settings, ["n1"], SimulatedService(), nic_of=lambda host: nic, ended=EndedJobs(state)
    )
    return node, nic


def run(node: NodeWorker, name: str, **kwargs: Any) -> Any:
    return node.app.tasks[name].apply(kwargs={"hostname": "n1", **kwargs}).get()


def job_services(nic: SimulatedNic) -> list[int]:
    return [s.id for d in nic.devices() for s in d.services if 1024 in s.vnis]


def test_a_prolog_after_the_epilog_makes_no_services_and_stops_nothing(
    redis_url: str, queue: str, tmp_path: Path
) -> None:
    node, nic = worker(redis_url, queue, tmp_path)
    cxi = {"vnis": [1024], "ncores": 4}
    run(node, "node.prolog", jobid=7, userid=1001, clientmount="stop", cxi=cxi)
    assert job_services(nic)
    run(node, "node.epilog", jobid=7, userid=1001, clientmount="start", cxi={"vnis": [1024]})
    assert job_services(nic) == [] and node.service.running("n1")

    assert run(node, "node.prolog", jobid=7, userid=1001, clientmount="stop", cxi=cxi) == {}
    assert run(node, "node.clientmount", jobid=7, action="stop") == "ignored"
    assert job_services(nic) == [] and node.service.running("n1")
    late = [a for a in answers(redis_url, queue) if a.get("late")]
    assert [a["jobid"] for a in late] == [7, 7]


def test_the_note_outlives_a_restart_of_the_node_worker(
    redis_url: str, queue: str, tmp_path: Path
) -> None:
    first, _ = worker(redis_url, queue, tmp_path)
    run(first, "node.epilog", jobid=8, userid=1001, clientmount="start", cxi=None)
    again, nic = worker(redis_url, queue, tmp_path)  # a new process, the same state dir
    cxi = {"vnis": [1024], "ncores": 4}
    assert run(again, "node.prolog", jobid=8, userid=1001, clientmount="stop", cxi=cxi) == {}
    assert job_services(nic) == []


def test_another_jobs_prolog_still_runs(redis_url: str, queue: str, tmp_path: Path) -> None:
    node, nic = worker(redis_url, queue, tmp_path)
    run(node, "node.epilog", jobid=9, userid=1001, clientmount=None, cxi=None)
    cxi = {"vnis": [1024], "ncores": 4}
    assert run(node, "node.prolog", jobid=10, userid=1001, clientmount=None, cxi=cxi)
    assert job_services(nic)


def test_a_state_dir_that_cannot_be_written_is_one_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match=r"--state-dir .* cannot be written"):
        EndedJobs(blocker / "state")

"""Each step of a job's work on a node is a function of its own (``node_worker.steps``),
run here without a broker or a queue: the prolog makes the job's CXI services on every
NIC and answers once, the clientmount stop stops the service and answers once, the
epilog destroys the services, starts the service for the unmounts and answers once —
each answer naming the node task it ends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coral2_sim.node.cassini import SimulatedNic
from coral2_sim.node.service import SimulatedService

from node_worker import steps
from node_worker.app import NodeWorker
from node_worker.ended import EndedJobs
from pipeline.model.answers import AnswerName
from pipeline.settings import load_settings


def test_prolog_clientmount_and_epilog_each_do_their_part_and_answer_once(
    tmp_path: Path,
) -> None:
    nic = SimulatedNic(devices=2)
    settings = load_settings(env={"CORAL2_PIPELINE_PIPELINE__BROKER_URL": "redis://127.0.0.1:9"})
    worker = NodeWorker(
        settings, ["n1"], SimulatedService(), nic_of=lambda host: nic, ended=EndedJobs(tmp_path)
    )
    answered: list[tuple[str, dict[str, Any]]] = []

    def answer(name: str, **kwargs: Any) -> None:
        answered.append((name, kwargs))

    cxi = {"vnis": [1024], "ncores": 4}
    services = steps.prolog(worker, answer, steps.JobStep("t1", "n1", 7, 1001, "start", cxi))
    assert len(services) == 2  # one per NIC
    assert worker.service.running("n1")
    assert answered == [(AnswerName.PROLOG, {"jobid": 7, "node": "n1", "task_id": "t1"})]

    assert steps.clientmount(worker, answer, "t2", "n1", 7, "stop") == "stop"
    assert not worker.service.running("n1")
    assert answered[1] == (AnswerName.CLIENTMOUNT, {"jobid": 7, "node": "n1", "task_id": "t2"})

    assert (
        steps.epilog(worker, answer, steps.JobStep("t3", "n1", 7, 1001, "start", {"vnis": [1024]}))
        == []
    )
    assert [s for d in nic.devices() for s in d.services if 1024 in s.vnis] == []
    assert worker.service.running("n1")  # started for the unmounts
    expected = {"jobid": 7, "node": "n1", "task_id": "t3", "busy": []}
    assert answered[2] == (AnswerName.EPILOG, expected)
    assert len(answered) == 3

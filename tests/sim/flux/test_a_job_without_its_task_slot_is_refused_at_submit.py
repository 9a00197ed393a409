"""The simulated job manager refuses a job whose resources hold no ``task`` slot for its
tasks (RFC 14): the real Flux takes one, and Fluxion then cannot write an R for the nodes
it allocates, so the job stays in SCHED for ever — a simulator that ran it would hide a
job that can never run."""

from __future__ import annotations

import pytest
from coral2_sim.demo.model import sample_path
from coral2_sim.flux.jobmanager import JobManager

from pipeline.model.rabbitmap import RabbitMapping

MAPPING = RabbitMapping.load(sample_path("sample-rabbitmapping.json"))
TASK = {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}


def test_a_node_without_a_task_slot_is_refused() -> None:
    with pytest.raises(ValueError, match="no slot labelled 'task'"):
        JobManager(MAPPING).submit([{"type": "node", "count": 1}])


def test_a_node_with_its_task_slot_is_taken() -> None:
    jm = JobManager(MAPPING)
    jobid = jm.submit([{"type": "node", "count": 1, "with": [TASK]}])
    job = jm.job(jobid)
    assert job.exceptions == [] and job.state in ("SCHED", "RUN")

"""A node prolog whose run dies with the node worker each time (a driver crash, the OOM
killer) is not run forever: after three runs that never ended, counted in the worker's
state directory across restarts, the next copy is answered as failed, naming the node,
and the job fails with it. A prolog that ends — even with an error — is never counted."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from coral2_sim.node.cassini import SimulatedNic
from coral2_sim.node.service import SimulatedService

from node_worker.app import NodeWorker
from node_worker.attempts import MAX_UNENDED, Attempts
from node_worker.ended import EndedJobs
from pipeline.settings import load_settings
from tests.node_worker.answers_of import answers


def worker(redis_url: str, queue: str, state: Path) -> NodeWorker:
    settings = load_settings(
        env={
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_url,
            "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": queue,
        }
    )
    nic = SimulatedNic(devices=2)
    return NodeWorker(
        settings, ["n1"], SimulatedService(), nic_of=lambda host: nic, ended=EndedJobs(state)
    )


def prolog(node: NodeWorker, task_id: str) -> Any:
    kwargs = {"hostname": "n1", "jobid": 9, "userid": 1001, "cxi": {"vnis": [1030], "ncores": 2}}
    return node.app.tasks["node.prolog"].apply(kwargs=kwargs, task_id=task_id).get()


def test_the_fourth_copy_after_three_deaths_is_answered_as_failed(
    redis_url: str, tmp_path: Path
) -> None:
    queue = f"poison-{uuid.uuid4().hex[:8]}"
    task_id = str(uuid.uuid4())
    died = Attempts(tmp_path)  # three runs began, and the worker died in each
    for _ in range(MAX_UNENDED):
        died.begin(task_id)
    node = worker(redis_url, queue, tmp_path)  # a restarted worker, same state directory
    assert prolog(node, task_id) == {}
    [answer] = answers(redis_url, queue)
    assert answer["node"] == "n1" and "died with the node worker 3 times on n1" in answer["error"]


def test_a_prolog_that_ends_is_not_counted(redis_url: str, tmp_path: Path) -> None:
    queue = f"fine-{uuid.uuid4().hex[:8]}"
    node = worker(redis_url, queue, tmp_path)
    task_id = str(uuid.uuid4())
    for _ in range(MAX_UNENDED + 2):  # the same copy, run again and again: each one ends
        prolog(node, task_id)
    assert all("error" not in a for a in answers(redis_url, queue))
    assert Attempts(tmp_path).begin(task_id) == 0

"""With ``pipeline.log_node_messages`` on, the logs follow each node message of a job: its
node prolog sent to a node, taken and answered there, the answer counted, the epilog the
same way — one INFO line each, naming the job and the node, whatever the log level. Off,
none is written."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import pytest
from coral2_sim.node.cassini import SimulatedNic
from coral2_sim.node.service import SimulatedService

from node_worker.app import NodeWorker
from node_worker.ended import EndedJobs
from pipeline.platform import nodework
from pipeline.settings import load_settings


def worker(redis_url: str, on: bool) -> NodeWorker:
    settings = load_settings(
        env={
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_url,
            "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": f"trace-{uuid.uuid4().hex[:8]}",
            "CORAL2_PIPELINE_PIPELINE__LOG_NODE_MESSAGES": "true" if on else "false",
        }
    )
    nic = SimulatedNic(devices=1)
    return NodeWorker(
        settings, ["n7"], SimulatedService(), nic_of=lambda h: nic, ended=EndedJobs(None)
    )


def test_each_node_message_is_one_line_naming_the_job_and_the_node(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    node = worker(redis_url, on=True)
    with caplog.at_level(logging.WARNING):  # the process logs warnings only
        caplog.handler.setLevel(logging.NOTSET)  # what reaches the handler is kept
        nodework.configure(node.settings.pipeline)
        cxi = {"vnis": [1030], "ncores": 2}
        kwargs = {"hostname": "n7", "jobid": 31, "userid": 1001, "clientmount": None}
        node.app.tasks["node.prolog"].apply(kwargs={**kwargs, "cxi": cxi}).get()
        node.app.tasks["node.epilog"].apply(kwargs={**kwargs, "cxi": {"vnis": [1030]}}).get()
    lines = [r.getMessage() for r in caplog.records if r.name == "coral2_pipeline.nodework"]
    assert [line.split(" ", 4)[:4] for line in lines] == [
        ["job", "31", "n7", "took"],
        ["job", "31", "n7", "answered"],
        ["job", "31", "n7", "took"],
        ["job", "31", "n7", "answered"],
    ], lines
    assert "job.prolog_done" in lines[1] and "job.epilog_done" in lines[3]


def test_off_by_default_nothing_is_written(
    redis_url: str, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    node = worker(redis_url, on=False)
    with caplog.at_level(logging.WARNING):
        caplog.handler.setLevel(logging.NOTSET)
        nodework.configure(node.settings.pipeline)
        node.app.tasks["node.ping"].apply(kwargs={"hostname": "n7"}).get()
        kwargs = {"hostname": "n7", "jobid": 32, "userid": 1001, "clientmount": None}
        node.app.tasks["node.prolog"].apply(kwargs={**kwargs, "cxi": None}).get()
    assert [r for r in caplog.records if r.name == "coral2_pipeline.nodework"] == []

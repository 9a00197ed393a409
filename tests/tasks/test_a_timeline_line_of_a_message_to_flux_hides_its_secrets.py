"""A message to Flux goes in the job's timeline as one line with its secrets redacted: the
Workflow's token among the prolog's variables, the fabric manager's session token in
the job's environment; a long payload is cut short."""

from __future__ import annotations

from pipeline.perform.performer import sent_line
from pipeline.store import OutboxMessage


def test_the_workflows_token_is_redacted_from_the_prologs_variables() -> None:
    variables = {"DW_JOB_scratch": "/mnt/nnf/x-0", "DW_WORKFLOW_TOKEN": "s3cret"}
    line = sent_line(OutboxMessage("prolog-remove", 7, {"id": 7, "variables": variables}))
    assert "s3cret" not in line
    assert line.startswith("prolog-remove ")
    assert '"DW_WORKFLOW_TOKEN": "<redacted>"' in line
    assert "/mnt/nnf/x-0" in line


def test_the_fabric_managers_token_is_redacted_from_the_jobs_environment() -> None:
    env = {"FI_CXI_COLL_MCAST_TOKEN": "t0ken", "FI_CXI_COLL_FABRIC_MGR_URL": "http://fm"}
    line = sent_line(OutboxMessage("kvs-put", 7, {"id": 7, "key": "hwcoll", "value": env}))
    assert "t0ken" not in line


def test_a_long_payload_is_cut_short() -> None:
    line = sent_line(OutboxMessage("kvs-put", 7, {"id": 7, "key": "k", "value": "x" * 5000}))
    assert len(line) < 400 and line.endswith("…")

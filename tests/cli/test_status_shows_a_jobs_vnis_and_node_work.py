"""``status -j`` shows the job's VNIs and how far its nodes' prologs are."""

from __future__ import annotations

from pipeline.model.job import JobRecord, NodeWork, Slingshot
from pipeline.store import Store
from tests.cli.status_helpers import Status


def test_the_job_report_names_its_vnis_and_the_nodes_it_waits_for(
    aimed: Store, status: Status
) -> None:
    state = Slingshot(vnis=[1024, 1025], nodes=["n1", "n2"])
    work = NodeWork(nodes=["n1", "n2"])
    aimed.jobs.create(JobRecord(jobid=4242, slingshot=state, node_work=work))
    aimed.tally.expect(4242, 2)
    aimed.tally.add(4242, "prolog", "n1")
    _, out, err = status("-j", "4242")
    assert err == ""
    text = " ".join(out.split())
    assert "VNIs 1024,1025" in text
    assert "prolog done on 1/2 nodes; held, waiting for n2" in text


def test_an_empty_reservation_says_why(aimed: Store, status: Status) -> None:
    aimed.jobs.create(JobRecord(jobid=4243, slingshot=Slingshot(reason="none requested")))
    _, out, _ = status("-j", "4243")
    assert "VNIs none (none requested)" in " ".join(out.split())

"""``status -j`` shows the job's VNIs and how far its nodes' CXI services are."""

from __future__ import annotations

from pipeline.model.job import JobRecord, Slingshot
from pipeline.store import Store
from tests.cli.status_helpers import Status


def test_the_job_report_names_its_vnis_and_its_nodes(aimed: Store, status: Status) -> None:
    state = Slingshot(vnis=[1024, 1025], nodes=["n1", "n2"], ready=["n1"])
    aimed.jobs.create(JobRecord(jobid=4242, slingshot=state))
    _, out, err = status("-j", "4242")
    assert err == ""
    assert "VNIs 1024,1025; services up on 1/2 nodes" in " ".join(out.split())


def test_an_empty_reservation_says_why(aimed: Store, status: Status) -> None:
    aimed.jobs.create(JobRecord(jobid=4243, slingshot=Slingshot(reason="none requested")))
    _, out, _ = status("-j", "4243")
    assert "VNIs none (none requested)" in " ".join(out.split())

"""``job.cleanup``'s list for a job that had node work or VNIs: its VNIs go to quarantine
on the nodes that got CXI services, each node of its node work gets one epilog (the CXI
part naming the job's VNIs, the clientmount part for a ``#DW`` job) after the count it
answers into, its multicast reservation is released, and a job tracked for its nodes
alone is finished once all of that is done — never before every node is clean. A re-run
after the VNIs were marked released sends no epilog again; one after the job was finished
finishes it again (the mark follows the work)."""

from __future__ import annotations

from pipeline.model.hwcoll import Reservation
from pipeline.model.job import JobRecord, NodeWork, Slingshot
from pipeline.states.actions import (
    ExpectAnswers,
    FinishJob,
    MarkDone,
    ReleaseVnis,
    SendNodeTask,
    SendTask,
)
from pipeline.states.cleanup import on_cleanup

NODES = ["n1", "n2"]


def reserved(**changes: object) -> JobRecord:
    state = Slingshot(vnis=[1024, 1025], nodes=NODES)
    work = NodeWork(nodes=NODES, dw=True)
    job = JobRecord(jobid=8, userid=1001, slingshot=state, node_work=work)
    return job.model_copy(update=changes)


def epilogs(actions: list[object]) -> list[SendNodeTask]:
    return [a for a in actions if isinstance(a, SendNodeTask)]


def test_the_vnis_are_quarantined_and_each_node_gets_one_epilog_after_the_count() -> None:
    actions = on_cleanup(reserved(workflow="fluxjob-8"), recorded=True, clientmount=True)
    assert actions[0] == ReleaseVnis(("n1", "n2"))
    [marked] = [a for a in actions if isinstance(a, MarkDone)]
    state = marked.changes["slingshot"]
    assert isinstance(state, Slingshot) and state.released
    sent = epilogs(actions)
    assert [a.node for a in sent] == NODES
    for send in sent:
        assert send.kwargs["cxi"] == {"vnis": [1024, 1025]}
        assert send.kwargs["clientmount"] == "start"
    assert actions.index(ExpectAnswers(2, "clean")) < actions.index(sent[0])
    assert FinishJob() not in actions  # its Workflow keeps it


def test_a_site_without_the_clientmount_service_sends_the_cxi_part_alone() -> None:
    sent = epilogs(on_cleanup(reserved(workflow="fluxjob-8"), recorded=True, clientmount=False))
    assert [a.kwargs.get("clientmount") for a in sent] == [None, None]


def test_a_reservation_on_no_node_sends_no_cxi_part() -> None:
    empty = reserved(slingshot=Slingshot(vnis=[1024], nodes=[]), workflow="fluxjob-8")
    sent = epilogs(on_cleanup(empty, recorded=True, clientmount=True))
    assert [a.kwargs.get("cxi") for a in sent] == [None, None]


def test_a_rerun_after_the_release_sends_no_epilog_again() -> None:
    again = reserved(slingshot=Slingshot(vnis=[1024], nodes=NODES, released=True))
    actions = on_cleanup(again, recorded=True, clientmount=True)
    assert epilogs(actions) == [] and not [a for a in actions if isinstance(a, ReleaseVnis)]


def test_a_job_of_nodes_alone_is_finished_only_once_every_node_is_clean() -> None:
    waiting = reserved(slingshot=Slingshot(vnis=[1024], nodes=NODES, released=True))
    assert FinishJob() not in on_cleanup(waiting, recorded=True, clientmount=True)
    clean = Slingshot(vnis=[1024], nodes=NODES, released=True, clean=NODES)
    assert on_cleanup(reserved(slingshot=clean), recorded=True, clientmount=True)[-1] == (
        FinishJob()
    )


def test_its_multicast_reservation_is_released_before_it_is_finished() -> None:
    clean = Slingshot(vnis=[1024], nodes=NODES, released=True, clean=NODES)
    held = Reservation(fm_job_id="fm8", mcast_limit=4, token="t", step="1")
    actions = on_cleanup(reserved(slingshot=clean, hwcoll=held), recorded=True, clientmount=True)
    assert actions[-2:] == [SendTask("hwcoll.release", {"jobid": 8}), FinishJob()]


def test_a_first_cleanup_finishes_a_job_of_nodes_alone_only_if_its_nodes_are_clean() -> None:
    unclean = reserved(slingshot=Slingshot(vnis=[1024], nodes=NODES))
    assert FinishJob() not in on_cleanup(unclean, recorded=True, clientmount=True)
    answered = reserved(slingshot=Slingshot(vnis=[1024], nodes=NODES, clean=NODES))
    assert on_cleanup(answered, recorded=True, clientmount=True)[-1] == FinishJob()


def test_node_work_without_vnis_still_releases_its_multicast_reservation() -> None:
    held = Reservation(fm_job_id="fm8", mcast_limit=4, token="t", step="1")
    job = reserved(slingshot=None, hwcoll=held, workflow="fluxjob-8")
    assert SendTask("hwcoll.release", {"jobid": 8}) in on_cleanup(
        job, recorded=True, clientmount=True
    )

"""The node prolog gives a job one CXI service per NIC: its user, its VNIs, its traffic
classes, the HPE limits scaled by the node's cores; a repeated prolog reuses them."""

from __future__ import annotations

import pytest
from coral2_sim.node.cassini import CASSINI_TOTALS, SimulatedNic

from node_worker.cxi import BEST_EFFORT, LOW_LATENCY, create_job_services, job_service
from pipeline.errors import CxiError, CxiNoSpace
from pipeline.model.slingshot import service_limits


def test_every_nic_gets_a_service_restricted_to_the_job() -> None:
    nic = SimulatedNic(devices=4)
    created = create_job_services(nic, uid=1001, vnis=[1062, 1063], ncores=96)
    assert created.services == {"cxi0": 2, "cxi1": 2, "cxi2": 2, "cxi3": 2}
    assert created.warnings == []
    for device in nic.devices():
        service = job_service(device, 1001, [1062, 1063])
        assert service is not None
        assert service.uids == (1001,) and service.vnis == (1062, 1063)
        assert service.tcs == BEST_EFFORT | LOW_LATENCY
        assert service.limits == service_limits(96, CASSINI_TOTALS)


def test_a_repeated_prolog_reuses_the_jobs_services() -> None:
    nic = SimulatedNic(devices=2)
    first = create_job_services(nic, uid=1001, vnis=[1062], ncores=8)
    again = create_job_services(nic, uid=1001, vnis=[1062], ncores=8)
    assert again.services == first.services
    assert [len(d.services) for d in nic.devices()] == [2, 2]


def test_a_nic_short_of_resources_gives_what_it_has_with_a_warning() -> None:
    nic = SimulatedNic(devices=1, totals={**CASSINI_TOTALS, "txqs": 300})
    create_job_services(nic, uid=1, vnis=[2000], ncores=100)  # 200 of the 300 TXQs
    created = create_job_services(nic, uid=2, vnis=[2001], ncores=100)
    [device] = nic.devices()
    service = job_service(device, 2, [2001])
    assert service is not None and service.limits["txqs"] == (300, 100)
    assert service.limits["ptes"] == (2048, 600)  # the rest in full
    assert created.warnings == [
        "cxi0: cannot reserve 200 TXQS: only 100 available; reserved what is left"
    ]


def test_a_nic_that_cannot_give_one_cores_worth_fails() -> None:
    nic = SimulatedNic(devices=1, totals={**CASSINI_TOTALS, "txqs": 2})
    create_job_services(nic, uid=1, vnis=[2000], ncores=1)
    with pytest.raises(CxiNoSpace, match="No space left on device"):
        create_job_services(nic, uid=2, vnis=[2001], ncores=1)


def test_the_tle_pools_allow_three_job_services_per_nic() -> None:
    nic = SimulatedNic(devices=1)
    for uid in (1, 2, 3):
        create_job_services(nic, uid=uid, vnis=[2000 + uid], ncores=1)
    with pytest.raises(CxiNoSpace):
        create_job_services(nic, uid=4, vnis=[2004], ncores=1)


@pytest.mark.parametrize("vnis", [[0], [70000], [2000, 2001, 2002, 2003, 2004]])
def test_invalid_vnis_are_refused_by_the_nic(vnis: list[int]) -> None:
    with pytest.raises(CxiError, match="Invalid argument"):
        create_job_services(SimulatedNic(devices=1), uid=1, vnis=vnis, ncores=1)


def test_service_ids_are_the_lowest_free_and_reused_after_destroy() -> None:
    nic = SimulatedNic(devices=1)
    create_job_services(nic, uid=1, vnis=[2001], ncores=1)
    create_job_services(nic, uid=2, vnis=[2002], ncores=1)
    nic.destroy("cxi0", 2)
    assert create_job_services(nic, uid=3, vnis=[2003], ncores=1).services == {"cxi0": 2}

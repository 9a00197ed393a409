"""The node's steps, as the pipeline sends them: the prolog makes the job's CXI services
and starts or stops clientmount, the clientmount step stops it after PreRun, the epilog
starts it for the unmounts and destroys the services. None waits for anything."""

from __future__ import annotations

from collections.abc import Callable

from coral2_sim.node.cassini import CASSINI_TOTALS, SimulatedNic
from coral2_sim.node.service import SimulatedService

from node_worker import perilog
from node_worker.cxi import create_job_services, job_service


def nic_of(nic: SimulatedNic) -> Callable[[str], SimulatedNic]:
    return lambda host: nic


def test_a_dw_job_prolog_makes_services_and_starts_clientmount() -> None:
    nic, service = SimulatedNic(devices=2), SimulatedService()
    outcome = perilog.prolog(
        "n1", 7, 1001, clientmount="start", cxi={"vnis": [1024], "ncores": 8},
        service=service, nic_of=nic_of(nic),
    )  # fmt: skip
    assert outcome.error == ""
    assert outcome.services == {"cxi0": 2, "cxi1": 2}
    assert service.running("n1")
    perilog.clientmount("n1", "stop", service)
    assert not service.running("n1")


def test_a_job_without_dw_stops_clientmount_and_may_have_no_services() -> None:
    service = SimulatedService()
    service.start("n1")
    outcome = perilog.prolog(
        "n1", 7, 1001, clientmount="stop", cxi=None, service=service, nic_of=nic_of(SimulatedNic())
    )
    assert (outcome.error, outcome.services) == ("", {})
    assert not service.running("n1")


def test_a_nic_without_room_fails_the_prolog_as_cray_slingshot() -> None:
    nic = SimulatedNic(devices=1, totals={**CASSINI_TOTALS, "txqs": 2})
    create_job_services(nic, uid=1000, vnis=[1030], ncores=1)  # both TXQs
    outcome = perilog.prolog(
        "n1", 7, 1001, clientmount=None, cxi={"vnis": [1024], "ncores": 1},
        service=SimulatedService(), nic_of=nic_of(nic),
    )  # fmt: skip
    assert outcome.error_type == "cray-slingshot"
    assert "cxi0" in outcome.error


def test_the_epilog_starts_clientmount_and_destroys_the_services() -> None:
    nic, service = SimulatedNic(devices=1), SimulatedService()
    cxi = {"vnis": [1024], "ncores": 8}
    perilog.prolog("n1", 7, 1001, clientmount="stop", cxi=cxi, service=service, nic_of=nic_of(nic))
    outcome = perilog.epilog(
        "n1", 1001, clientmount="start", cxi={"vnis": [1024]}, service=service, nic_of=nic_of(nic)
    )
    assert outcome.busy == []
    assert service.running("n1")
    [device] = nic.devices()
    assert job_service(device, 1001, [1024]) is None

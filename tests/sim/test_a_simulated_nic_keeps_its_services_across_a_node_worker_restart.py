"""A simulated NIC keeps its CXI services as the hardware does, outside any process: a
node worker killed after it made a job's services finds them when it starts again — so a
leak a kill causes shows in the leak check instead of vanishing with the worker's memory."""

from __future__ import annotations

from pathlib import Path

from coral2_sim.node.cassini import SimulatedNic

from node_worker.cxi import ServiceRequest, create_job_services, job_service


def test_services_made_before_a_restart_are_there_after_it(tmp_path: Path) -> None:
    state = tmp_path / "nics" / "compute15.json"
    before = SimulatedNic(state=state)
    made = create_job_services(before, 1001, [1033], ncores=8)
    assert len(made.services) == 4

    after = SimulatedNic(state=state)  # the worker started again
    for device in after.devices():
        service = job_service(device, 1001, [1033])
        assert service is not None and service.id == made.services[device.name]
    after.destroy("cxi0", made.services["cxi0"])
    assert job_service(SimulatedNic(state=state).devices()[0], 1001, [1033]) is None


def test_its_resources_stay_taken_across_the_restart(tmp_path: Path) -> None:
    state = tmp_path / "nic.json"
    nic = SimulatedNic(devices=1, state=state)
    nic.allocate("cxi0", ServiceRequest(1001, (1040,), {"tles": (8, 8), "les": (100, 100)}))
    again = SimulatedNic(devices=1, state=state)
    shared_before = nic.devices()[0]
    shared_after = again.devices()[0]
    assert shared_after.services == shared_before.services


def test_without_a_state_file_nothing_is_kept(tmp_path: Path) -> None:
    nic = SimulatedNic(devices=1)
    create_job_services(nic, 1001, [1050], ncores=2)
    assert job_service(SimulatedNic(devices=1).devices()[0], 1001, [1050]) is None

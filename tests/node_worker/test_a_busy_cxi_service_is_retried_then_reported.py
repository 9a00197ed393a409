"""The node epilog destroys the job's services, retrying busy ones for a while, and says
which are still busy when it gives up."""

from __future__ import annotations

import pytest
from coral2_sim.node.cassini import SimulatedNic

from node_worker.cxi import create_job_services, destroy_job_services
from pipeline.errors import CxiError


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_idle_services_are_destroyed_at_once() -> None:
    nic = SimulatedNic(devices=2)
    create_job_services(nic, uid=7, vnis=[3000], ncores=4)
    assert destroy_job_services(nic, 7, [3000]) == []
    assert [len(d.services) for d in nic.devices()] == [1, 1]


def test_a_service_busy_for_a_while_is_destroyed_within_the_retry() -> None:
    clock = Clock()
    nic = SimulatedNic(devices=1, busy_s=3.0, clock=clock)
    create_job_services(nic, uid=7, vnis=[3000], ncores=4)
    nic.use("cxi0", 2)
    assert destroy_job_services(nic, 7, [3000], sleep=clock.sleep, clock=clock) == []
    assert clock.now == 3.0


def test_a_service_busy_past_the_retry_is_reported() -> None:
    clock = Clock()
    nic = SimulatedNic(devices=1, busy_s=60.0, clock=clock)
    create_job_services(nic, uid=7, vnis=[3000], ncores=4)
    nic.use("cxi0", 2)
    left = destroy_job_services(nic, 7, [3000], retry_busy_s=5, sleep=clock.sleep, clock=clock)
    assert left == ["cxi0 service 2"]
    assert clock.now == 5.0


def test_other_jobs_and_the_default_service_are_left_alone() -> None:
    nic = SimulatedNic(devices=1)
    create_job_services(nic, uid=7, vnis=[3000], ncores=1)
    create_job_services(nic, uid=8, vnis=[3001], ncores=1)
    destroy_job_services(nic, 7, [3000])
    [device] = nic.devices()
    assert [s.id for s in device.services] == [1, 3]
    with pytest.raises(CxiError, match="Invalid argument"):
        nic.destroy("cxi0", 1)

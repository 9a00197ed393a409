"""Redis emptied in the middle of a batch — every record, ledger entry, queued task,
deadline, once-mark and VNI reservation gone, as after a total loss replaced by an empty
Redis — and every job still ends as it should, with nothing left behind: the store is a
copy, and the pipeline rebuilds what it needs from Flux (the events journal: what each
job still waits on, and the VNIs of each job's ``cray-slingshot`` event) and DWS (each
Workflow's state). Emptied at a moment when every allocated job's VNIs are in its
eventlog: a reservation made in the instant before a loss, its event not yet in Flux,
leaves its nodes' CXI services for ``coral2-pipeline slingshot clean`` (docs/platform.md)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
from coral2_sim.demo.metrics import leaks
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import event_names, nodes, start_system

DWS = (
    "#DW jobdw type=xfs capacity=8GiB name=scratch",
    "#DW jobdw type=gfs2 capacity=8GiB name=shared",
    None,
)


@pytest.fixture(scope="module")
def system() -> Iterator[SimulatedSystem]:
    sim = start_system(slingshot=True)  # VNIs and CXI services on every node, too
    yield sim
    sim.stop()


def test_every_job_ends_as_it_should_after_redis_is_emptied(system: SimulatedSystem) -> None:
    assert system.flux is not None and system.redis_url is not None
    flux = system.flux
    ids = [
        flux.submit(nodes(2), system={} if dw is None else {"dw": dw}, runtime_s=2.0)
        for dw in DWS * 3
    ]
    deadline = time.monotonic() + 120
    while True:  # some job running, and every allocated job's VNIs in its eventlog
        with flux.lock:  # nothing moves in Flux until Redis is emptied
            jobs = [flux.job(j) for j in ids]
            running = any(job.state == "RUN" and job.started for job in jobs)
            allocated = [event_names(job) for job in jobs if "alloc" in event_names(job)]
            if running and all("cray-slingshot" in names for names in allocated):
                with redis.Redis.from_url(system.redis_url) as admin:
                    admin.flushall()
                break
        assert time.monotonic() < deadline, [event_names(flux.job(j))[-2:] for j in ids]
        time.sleep(0.02)
    assert flux.wait_inactive(ids, 300), [
        (j, flux.job(j).state, event_names(flux.job(j))[-3:]) for j in ids
    ]
    assert [flux.job(j).result for j in ids] == ["COMPLETED"] * len(ids), [
        (j, flux.job(j).exceptions) for j in ids
    ]
    settle = time.monotonic() + 60
    while leaks(system) and time.monotonic() < settle:
        time.sleep(0.2)
    assert leaks(system) == [], "\n".join(leaks(system))

"""A crash of Redis's host loses the writes its append-only file had not synced, and
with them requests Flux already had its answer to: here every ``#DW`` job's ``dws.create``
(its ledger entry, its task message) is lost after dws-jobtap was told the pipeline took
it, so each job waits in DEPEND on ``dws-create`` and no Workflow exists. The bridge sees
Redis restarted (its run_id changed) and sends again what Flux still waits on: every job
then completes, and nothing is left behind."""

from __future__ import annotations

import os
import signal
import time

from coral2_sim.demo.metrics import leaks
from coral2_sim.outages import restart_redis
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import event_names, nodes

DWS = (
    "#DW jobdw type=xfs capacity=8GiB name=scratch",
    "#DW jobdw type=gfs2 capacity=8GiB name=shared",
)


def test_jobs_whose_create_the_crash_lost_all_complete(system: SimulatedSystem) -> None:
    assert system.flux is not None and system.redis is not None and system.dws is not None
    flux = system.flux
    mark = system.redis.aof_mark()
    worker = system.procs.pids()["worker"]
    os.kill(worker, signal.SIGSTOP)  # the hooks are answered, no task runs
    try:
        ids = [flux.submit(nodes(2), system={"dw": DWS[i % 2]}, runtime_s=0.3) for i in range(6)]
        deadline = time.monotonic() + 60
        while not all("dependency-add dws-create" in event_names(flux.job(j)) for j in ids):
            assert time.monotonic() < deadline, [event_names(flux.job(j)) for j in ids]
            time.sleep(0.05)
        time.sleep(1.5)  # the append-only file has the answered requests now (everysec)
        restart_redis(system, host_crash=mark)
    finally:
        os.kill(worker, signal.SIGCONT)
    assert not system.dws.list_objects("workflows")[0]  # nothing of them reached DWS
    assert flux.wait_inactive(ids, 240), [
        (j, flux.job(j).state, event_names(flux.job(j))[-3:]) for j in ids
    ]
    assert [flux.job(j).result for j in ids] == ["COMPLETED"] * len(ids), [
        flux.job(j).exceptions for j in ids
    ]
    # a hang guard: a sent task whose message the crash lost, put off while the stopped
    # worker's queue was long, is sent again within pipeline.resend_after (120 s)
    settle = time.monotonic() + 240
    while leaks(system) and time.monotonic() < settle:
        time.sleep(0.2)
    assert leaks(system) == []

"""``coral2-pipeline recover`` on a Redis that lost writes without restarting (here the
answered ``dws.create``s' task messages and ledger entries deleted, as a restore from an
older backup would leave it): the bridge sees the store's generation renewed and sends
again what Flux still waits on, so each job, held in DEPEND with no Workflow, completes.
The command says what it did in one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import redis
from coral2_sim.demo.metrics import leaks
from coral2_sim.system import SimulatedSystem

from tests.e2e.conftest import event_names, nodes

DW = "#DW jobdw type=xfs capacity=8GiB name=scratch"


def test_jobs_whose_requests_were_lost_complete_once_recover_runs(
    system: SimulatedSystem,
) -> None:
    assert system.flux is not None and system.store is not None and system.dws is not None
    flux, store = system.flux, system.store
    worker = system.procs.pids()["worker"]
    os.kill(worker, signal.SIGSTOP)  # the hooks are answered, no task runs
    try:
        ids = [flux.submit(nodes(1), system={"dw": DW}, runtime_s=0.2) for _ in range(3)]
        deadline = time.monotonic() + 60
        while not all("dependency-add dws-create" in event_names(flux.job(j)) for j in ids):
            assert time.monotonic() < deadline, [event_names(flux.job(j)) for j in ids]
            time.sleep(0.05)
        with redis.Redis.from_url(system.redis_url or "") as admin:
            admin.delete("lifecycle", store.keys.ledger, store.keys.ledger_due)
    finally:
        os.kill(worker, signal.SIGCONT)
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "recover"],
        env=system.env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    assert line.startswith("store generation renewed (")
    assert flux.wait_inactive(ids, 180), [(j, event_names(flux.job(j))[-3:]) for j in ids]
    assert [flux.job(j).result for j in ids] == ["COMPLETED"] * 3
    settle = time.monotonic() + 60
    while leaks(system) and time.monotonic() < settle:
        time.sleep(0.2)
    assert leaks(system) == []

"""Hardware collectives at job start: 500 eligible jobs while the fabric manager answers in
200 ms, then is down for 30 s, then returns.

Reports the delay the reservation adds to each job's start (p50, p99, max; it must stay
under ``hwcoll.request_timeout``) and the reservations left at the fabric manager once
it is back and the releases and ``hwcoll.reconcile`` have run (must be 0).

``python -m benchmarks.hwcoll [--jobs 500] [--outage 30]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from celery.exceptions import Retry
from coral2_sim.fabric import FabricManagerSim

from benchmarks.servers import percentile, redis_server
from pipeline.model.job import JobRecord
from pipeline.platform.app import create_app
from pipeline.settings import load_settings
from pipeline.states.actions import Action, ReserveMulticast, UpdateJob
from pipeline.tasks.dws import act
from pipeline.tasks.hwcoll import close_fabric, multicast_ask

TIMEOUT_S = 1.0


def _app(url: str, fm: FabricManagerSim, workdir: Path) -> Any:
    auth = fm.write_credentials(workdir / "fm")
    settings = load_settings(
        env={
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": url,
            "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": f"bench-{uuid.uuid4().hex[:6]}",
            # no Kubernetes call is made here; the client needs an address all the same
            "CORAL2_PIPELINE_PIPELINE__API_HOST": "http://127.0.0.1:9",
            "CORAL2_PIPELINE_HWCOLL__URL": fm.url,
            "CORAL2_PIPELINE_HWCOLL__AUTH_DIR": str(auth),
            "CORAL2_PIPELINE_HWCOLL__MIN_JOB_NODES": "64",
            "CORAL2_PIPELINE_HWCOLL__SYSTEM_NODES": "11136",
            "CORAL2_PIPELINE_HWCOLL__REQUEST_TIMEOUT": str(TIMEOUT_S),
            "CORAL2_PIPELINE_HWCOLL__CLUSTER": "elcap",
        }
    )
    return create_app(settings, set_current=False)


def bench_hwcoll(jobs: int = 500, outage_s: float = 30.0) -> dict[str, float]:
    """Added start delay per job and reservations left."""
    with (
        redis_server() as url,
        FabricManagerSim(latency_s=0.2) as fm,
        tempfile.TemporaryDirectory() as tmp,
    ):
        app = _app(url, fm, Path(tmp))
        task = app.tasks["job.run"]
        store = task.store
        delays: list[float] = []
        phase: dict[int, list[float]] = {0: [], 1: []}  # 0: it answers, 1: it is down

        def start(jobid: int) -> None:
            record = JobRecord(jobid=jobid)
            store.jobs.create(record)
            began = time.perf_counter()  # what job.run adds: the ask, then the reservation
            ask = multicast_ask(task, record, 64, False)
            actions: list[Action] = []
            if ask is not None and ask.off:
                actions = [UpdateJob({"hwcoll_off": ask.off})]
            elif ask is not None:
                actions = [ReserveMulticast(ask.fm_job_id, ask.limit, str(jobid))]
            act(task, jobid, actions)
            delays.append(time.perf_counter() - began)
            phase[int(jobid > first)].append(delays[-1])

        def release(jobid: int) -> bool:
            try:
                app.tasks["hwcoll.release"].apply(kwargs={"jobid": jobid}, throw=True)
            except Retry:
                return False
            return True

        first = jobs // 2
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(start, range(1, first + 1)))  # the fabric manager answers in 200 ms
            fm.fault(down=True)
            began = time.monotonic()
            pending = [j for j in range(1, first // 2 + 1) if not release(j)]  # jobs ending
            later = range(first + 1, jobs + 1)
            for index, jobid in enumerate(later):  # jobs keep starting through the outage
                pool.submit(start, jobid)
                time.sleep(max(0.0, began + outage_s * (index + 1) / len(later) - time.monotonic()))
            pool.shutdown(wait=True)
            fm.fault(down=False)
        store.fabric.up()
        with ThreadPoolExecutor(8) as pool:  # the retries, then the rest of the jobs end
            unreleased = [
                j for j, ok in zip(pending, pool.map(release, pending), strict=True) if not ok
            ]
            list(pool.map(release, range(first // 2 + 1, jobs + 1)))
        app.tasks["hwcoll.reconcile"].apply().get()
        close_fabric(app)
        reserved = sum(1 for j in range(1, jobs + 1) if (r := store.jobs.get(j)) and r.hwcoll)
        return {
            "jobs": jobs,
            "reserved": reserved,
            "p50_ms": percentile(delays, 50) * 1000,
            "p99_ms": percentile(delays, 99) * 1000,
            "max_ms": max(delays) * 1000,
            "up_p50_ms": percentile(phase[0], 50) * 1000,
            "up_p99_ms": percentile(phase[0], 99) * 1000,
            "down_p50_ms": percentile(phase[1], 50) * 1000,
            "down_p99_ms": percentile(phase[1], 99) * 1000,
            "timeout_ms": TIMEOUT_S * 1000,
            "released_late": len(pending) - len(unreleased),
            "left": len(fm.reservations()),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--outage", type=float, default=30.0)
    args = parser.parse_args()
    r = bench_hwcoll(args.jobs, args.outage)
    print(
        f"{r['jobs']:.0f} eligible jobs, fabric manager at 200 ms then down {args.outage:g} s: "
        f"{r['reserved']:.0f} reserved; added start delay p50 {r['p50_ms']:.0f} ms, p99 "
        f"{r['p99_ms']:.0f} ms, max {r['max_ms']:.0f} ms (timeout {r['timeout_ms']:.0f} ms; "
        f"while it answers p50 {r['up_p50_ms']:.0f} / p99 {r['up_p99_ms']:.0f} ms, while it "
        f"is down p50 {r['down_p50_ms']:.0f} / p99 {r['down_p99_ms']:.0f} ms); "
        f"{r['released_late']:.0f} releases done after the outage; reservations left: "
        f"{r['left']:.0f}"
    )


if __name__ == "__main__":
    main()

"""What one Prometheus scrape of the exporter, and one ``slingshot pool``, cost in the
exporter's own CPU with 5,000 jobs in flight (each holding two VNIs of a 64,512-VNI pool,
a quarter of them a hardware-collective reservation).

``python -m benchmarks.exporter [--jobs 5000] [--scrapes 20]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time
from typing import Any

from benchmarks.servers import percentile, redis_server
from pipeline.cli.exporter_cmd import PipelineCollector
from pipeline.cli.slingshot_cmd import print_pool
from pipeline.model.hwcoll import Reservation
from pipeline.model.job import JobRecord
from pipeline.settings import load_settings
from pipeline.store import Store

#: the VNI universe of the benchmark: 64,512 VNIs, as a site's pool may be
UNIVERSE = "1024-65535"


def _fill(store: Store, jobs: int) -> None:
    store.vnipool.configure(UNIVERSE)
    for jobid in range(1, jobs + 1):
        hwcoll = None
        if jobid % 4 == 0:
            hwcoll = Reservation(fm_job_id=f"fm{jobid}", mcast_limit=4, token="t", step="1")
        record = JobRecord(
            jobid=jobid,
            userid=1000,
            workflow=f"fluxjob-{jobid}",
            hosts=[f"compute{jobid % 11136}"],
            state="PreRun",
            hwcoll=hwcoll,
        )
        store.jobs.create(record)
        store.vnipool.reserve(jobid, 2)


def _cpu_ms(work: Any, runs: int) -> list[float]:
    spent = []
    for _ in range(runs):
        began = time.process_time()
        work()
        spent.append((time.process_time() - began) * 1000)
    return spent


def bench_exporter(jobs: int = 5000, scrapes: int = 20) -> dict[str, float]:
    """CPU ms (p50, max) of a scrape and of ``slingshot pool``, text and JSON."""
    with redis_server() as url:
        settings = load_settings(
            env={
                "CORAL2_PIPELINE_PIPELINE__BROKER_URL": url,
                "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": "bench",
            }
        )
        store = Store.from_url(url, "bench")
        _fill(store, jobs)
        collector = PipelineCollector(settings, store)
        scrape = _cpu_ms(lambda: list(collector.collect()), scrapes)

        def pool(as_json: bool) -> None:
            with contextlib.redirect_stdout(io.StringIO()):
                print_pool(settings, store, as_json=as_json)

        text = _cpu_ms(lambda: pool(False), scrapes)
        as_json = _cpu_ms(lambda: pool(True), scrapes)
    return {
        "jobs": jobs,
        "scrape_p50_ms": percentile(scrape, 50),
        "scrape_max_ms": max(scrape),
        "pool_p50_ms": percentile(text, 50),
        "pool_json_p50_ms": percentile(as_json, 50),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--scrapes", type=int, default=20)
    args = parser.parse_args()
    print(bench_exporter(args.jobs, args.scrapes))


if __name__ == "__main__":
    main()

"""A real Prometheus (Debian's, which ``make promtool`` installs) scrapes the exporter as
the shipped alert rules expect it to: the target is up (a scrape answered within
``scrape_timeout``), and a query answers what the store holds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from coral2_sim.children import die_with_parent
from coral2_sim.redis_server import RedisServer, free_port

from pipeline.store import JobRecord, Store
from tests.http_service import wait_until_served

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(
    PROMETHEUS is None, reason="no prometheus (make promtool installs Debian's)"
)


def spawn(argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(die_with_parent(argv), env=env, stdout=out, stderr=out)


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[str, Store]]:
    redis_server = RedisServer(tmp_path).start()
    prefix = f"prom-{uuid.uuid4().hex[:6]}"
    store = Store.from_url(redis_server.url, prefix)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")}
    env["CORAL2_PIPELINE_PIPELINE__BROKER_URL"] = redis_server.url
    env["CORAL2_PIPELINE_PIPELINE__KEY_PREFIX"] = prefix
    port, web = free_port(), free_port()
    exporter = spawn(
        [sys.executable, "-m", "pipeline.cli", "exporter", "--port", str(port)],
        tmp_path / "exporter.log",
        env,
    )
    wait_until_served(f"http://127.0.0.1:{port}/metrics", exporter, tmp_path / "exporter.log")
    config = {
        "global": {"scrape_interval": "2s", "scrape_timeout": "2s"},
        "scrape_configs": [
            {"job_name": "coral2-pipeline", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    assert PROMETHEUS is not None
    server = spawn(
        [
            PROMETHEUS,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{web}",
        ],
        tmp_path / "prometheus.log",
    )
    try:
        yield f"http://127.0.0.1:{web}", store
    finally:
        for proc in (server, exporter):
            proc.terminate()
            proc.wait(timeout=60)
        store.close()
        redis_server.stop()


def query(base: str, promql: str) -> list[dict[str, Any]]:
    try:
        answer = httpx.get(f"{base}/api/v1/query", params={"query": promql}, timeout=10)
    except httpx.HTTPError:
        return []  # not listening yet
    if answer.status_code == httpx.codes.SERVICE_UNAVAILABLE:
        return []  # listening, but its storage is not open yet ("Service Unavailable")
    answer.raise_for_status()
    result: list[dict[str, Any]] = answer.json()["data"]["result"]
    return result


def eventually(base: str, promql: str, log: Path, timeout_s: float = 120) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while not (result := query(base, promql)):
        assert time.monotonic() < deadline, f"{promql} never answered; {log.read_text()[-2000:]}"
        time.sleep(0.5)
    return result


def test_prometheus_finds_the_exporter_up_and_reads_the_jobs(
    prometheus: tuple[str, Store], tmp_path: Path
) -> None:
    base, store = prometheus
    store.jobs.create(JobRecord(jobid=7, state="PreRun:ready", observed_at=time.time()))
    log = tmp_path / "prometheus.log"
    (up,) = eventually(base, 'up{job="coral2-pipeline"} == 1', log)
    assert up["value"][1] == "1"
    (jobs,) = eventually(base, 'coral2_jobs{state="PreRun:ready"}', log)
    assert jobs["value"][1] == "1"

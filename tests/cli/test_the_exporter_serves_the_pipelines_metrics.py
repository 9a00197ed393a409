"""``coral2-pipeline exporter`` serves the pipeline's state at /metrics in Prometheus's
text format, read afresh at each scrape: jobs by state and the oldest in each, queue
depths, the outbox, failures by task (kept and ever), the transition histogram, the
verdict of ``status``; and ``coral2_up 0``, not an error page, while Redis is down."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from coral2_sim.children import die_with_parent
from coral2_sim.redis_server import RedisServer, free_port
from prometheus_client.parser import text_string_to_metric_families

from pipeline import __version__
from pipeline.store import JobRecord, OutboxMessage, Store
from tests.http_service import wait_until_served


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[tuple[str, Store, RedisServer]]:
    redis_server = RedisServer(tmp_path).start()
    prefix = f"ex-{uuid.uuid4().hex[:6]}"
    store = Store.from_url(redis_server.url, prefix)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")}
    env["CORAL2_PIPELINE_PIPELINE__BROKER_URL"] = redis_server.url
    env["CORAL2_PIPELINE_PIPELINE__KEY_PREFIX"] = prefix
    argv = [sys.executable, "-m", "pipeline.cli", "exporter", "--port", str(port)]
    with (tmp_path / "exporter.log").open("wb") as log:
        proc = subprocess.Popen(die_with_parent(argv), env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}/metrics"
    wait_until_served(url, proc, tmp_path / "exporter.log")
    yield url, store, redis_server
    proc.terminate()
    proc.wait(timeout=30)
    store.close()
    redis_server.stop()


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(url, timeout=30).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_a_scrape_shows_what_the_store_holds(exporter: tuple[str, Store, RedisServer]) -> None:
    url, store, _ = exporter
    now = time.time()
    store.jobs.create(JobRecord(jobid=1, state="Proposal:DriverWait", observed_at=now - 120))
    store.jobs.create(JobRecord(jobid=2, state="PreRun:ready", observed_at=now - 10))
    store.jobs.create(JobRecord(jobid=3, state="PreRun:ready", observed_at=now - 30))
    store.outbox.append(OutboxMessage("memo", 1, {"id": 1, "memo": {"rabbits": "rabbit1"}}))
    failure = {"task": "dws.setup", "jobid": 1, "reason": "boom", "time": now}
    store.runs.record_failure("t1", failure)
    store.runs.record_failure("t1", failure)  # the same message again: counted once
    store.metrics.observe_transition("Setup", 0.3)
    store.metrics.observe_transition("Setup", 7.0)
    store.client.rpush("lifecycle", b"m1", b"m2")
    metrics = scrape(url)
    assert metrics[("coral2_up", ())] == 1
    assert metrics[("coral2_build_info", (("version", __version__),))] == 1
    assert metrics[("coral2_scrape_duration_seconds", ())] > 0
    assert metrics[("coral2_scrape_errors_total", ())] == 0
    assert metrics[("coral2_jobs", (("state", "PreRun:ready"),))] == 2
    assert metrics[("coral2_jobs", (("state", "Proposal:DriverWait"),))] == 1
    assert metrics[("coral2_job_oldest_seconds", (("state", "PreRun:ready"),))] >= 30
    assert metrics[("coral2_job_oldest_seconds", (("state", "Proposal:DriverWait"),))] >= 120
    assert metrics[("coral2_outbox_backlog", ())] == 1
    assert metrics[("coral2_queue_messages", (("queue", "lifecycle"),))] == 2
    assert metrics[("coral2_task_failures_kept", (("task", "dws.setup"),))] == 1
    assert metrics[("coral2_task_failures_total", (("task", "dws.setup"),))] == 1
    setup = ("state", "Setup")
    assert metrics[("coral2_transition_seconds_bucket", (("le", "0.25"), setup))] == 0
    assert metrics[("coral2_transition_seconds_bucket", (("le", "0.5"), setup))] == 1
    assert metrics[("coral2_transition_seconds_bucket", (("le", "+Inf"), setup))] == 2
    assert metrics[("coral2_transition_seconds_count", (setup,))] == 2
    assert metrics[("coral2_transition_seconds_sum", (setup,))] == pytest.approx(7.3)
    assert metrics[("coral2_status", ())] == 2  # no watcher, no beat: CRITICAL
    # each cause of it a gauge of its own, which its own alert reads
    assert metrics[("coral2_watcher_leading", ())] == 0
    # each "since when" a Unix timestamp, absent when there is none
    assert ("coral2_beat_last_tick_timestamp_seconds", ()) not in metrics  # never ticked
    assert 0 <= time.time() - metrics[("coral2_outbox_oldest_timestamp_seconds", ())] < 60
    assert ("coral2_vni_quarantine_oldest_timestamp_seconds", ()) not in metrics


def test_the_oldest_quarantine_is_when_it_began(exporter: tuple[str, Store, RedisServer]) -> None:
    url, store, _ = exporter
    store.vnipool.configure("1024-1100")
    store.vnipool.reserve(9, 2)
    before = time.time()
    store.vnipool.release(9, ["c1"])  # in quarantine until c1 confirms
    since = scrape(url)[("coral2_vni_quarantine_oldest_timestamp_seconds", ())]
    assert before - 1 <= since <= time.time()
    store.vnipool.confirm_destroyed(9, "c1")
    assert ("coral2_vni_quarantine_oldest_timestamp_seconds", ()) not in scrape(url)


def test_a_scrape_while_redis_is_down_says_so(exporter: tuple[str, Store, RedisServer]) -> None:
    url, _, redis_server = exporter
    redis_server.stop()
    metrics = scrape(url)
    assert metrics[("coral2_up", ())] == 0
    assert ("coral2_jobs", ()) not in metrics
    assert metrics[("coral2_scrape_errors_total", ())] >= 1  # this one, counted
    assert ("coral2_build_info", (("version", __version__),)) in metrics

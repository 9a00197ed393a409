"""The shipped Grafana dashboard asks only for metrics the exporter serves, in PromQL that
Prometheus's own checker accepts: each panel's query is loaded by ``promtool check rules``
as a recording rule, and every ``coral2_*`` name in it is one a scrape of the exporter
answers."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from coral2_sim.redis_server import RedisServer
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from pipeline.cli.exporter_cmd import PipelineCollector
from pipeline.settings import load_settings
from pipeline.store import JobRecord, Store

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "coral2-pipeline.json"


def queries() -> list[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [
        (panel["title"], target["expr"])
        for panel in dashboard["panels"]
        for target in panel["targets"]
    ]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[set[str]]:
    """The sample names a scrape of the exporter answers, with a job tracked, a transition
    and a failure counted (a labelled metric has samples only once it counts)."""
    with RedisServer(tmp_path_factory.mktemp("grafana")) as server:
        prefix = f"gf-{uuid.uuid4().hex[:6]}"
        store = Store.from_url(server.url, prefix)
        store.jobs.create(JobRecord(jobid=1, state="Setup:ready", observed_at=time.time()))
        store.metrics.observe_transition("Setup", 0.2)
        store.runs.record_failure("t1", {"task": "dws.setup", "jobid": 1, "reason": "x"})
        settings = load_settings(
            env={
                "CORAL2_PIPELINE_PIPELINE__BROKER_URL": server.url,
                "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": prefix,
            }
        )
        registry = CollectorRegistry()
        registry.register(PipelineCollector(settings, store))
        text = generate_latest(registry).decode()
        store.close()
    yield {s.name for f in text_string_to_metric_families(text) for s in f.samples}


def test_the_dashboard_has_panels_with_queries() -> None:
    assert len(queries()) >= 10


def test_every_metric_a_panel_asks_for_is_served(served: set[str]) -> None:
    for title, expr in queries():
        names = set(re.findall(r"\bcoral2_[a-z_]+", expr))
        assert names, f"{title}: {expr} asks for no coral2 metric"
        assert names <= served, f"{title}: {sorted(names - served)} not served"


def test_every_panel_query_passes_promtool(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is not installed: run `make test` (it installs it)")
    rules = [
        {"record": f"dashboard:panel_{i}", "expr": expr} for i, (_, expr) in enumerate(queries())
    ]
    path = tmp_path / "dashboard.rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    done = subprocess.run(
        [promtool, "check", "rules", str(path)],
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(rules)} rules found" in done.stdout


def test_every_panel_is_scoped_by_the_instance_variable() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    [variable] = dashboard["templating"]["list"]
    assert variable["name"] == "instance" and "coral2_up" in variable["definition"]
    for title, expr in queries():
        for name in re.findall(r"\bcoral2_[a-z_]+\b", expr):
            assert f'{name}{{instance=~"$instance"}}' in expr, (title, expr)


def test_the_vni_pool_is_drawn_on_a_log_scale() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    [panel] = [p for p in dashboard["panels"] if p["title"] == "VNI pool"]
    scale = panel["fieldConfig"]["defaults"]["custom"]["scaleDistribution"]
    assert scale == {"type": "log", "log": 10}  # 64,512 free beside a handful quarantined

"""flux-core 0.88 keeps at most ``[resource] journal-max`` events in its resource journal
and heads it, once it dropped its oldest, with a ``truncate`` event that has no context.
A real instance with ``journal-max = 4`` streams, after six drains and undrains, a
truncate and the last three; the simulated Flux's journal (the pipeline's eventlog) does
the same; and the bridge's mirror, fed the real journal on a first start, keeps the
truncate as the gap it is, with the instance's nodelist, and every event after it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pipeline.model.rabbitmap import RabbitMapping
from pipeline.services.bridge.resources import ResourceMirror
from pipeline.sim.demo.model import sample_path
from pipeline.sim.flux.jobmanager import JobManager
from pipeline.store import Store
from tests.flux.conftest import HOSTS

JOURNAL_MAX = 4
REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("resource.drain", {"targets": "compute01", "reason": "one"}),
    ("resource.undrain", {"targets": "compute01"}),
    ("resource.drain", {"targets": "compute02", "reason": "two"}),
    ("resource.drain", {"targets": "compute01", "reason": "three"}),
    ("resource.undrain", {"targets": "compute02"}),
    ("resource.undrain", {"targets": "compute01"}),
]


@pytest.fixture
def capped_config(tmp_path: Path) -> Path:
    config = tmp_path / "config"
    config.mkdir()
    (config / "resource.toml").write_text(
        f"[resource]\nnoverify = true\njournal-max = {JOURNAL_MAX}\n\n"
        f'[[resource.config]]\nhosts = "{HOSTS}"\ncores = "0-3"\n'
    )
    return config


def real_journal(prefix: Path, config: Path, tmp: Path) -> list[dict[str, Any]]:
    path = tmp / "requests.json"
    path.write_text(json.dumps(REQUESTS))
    env = dict(os.environ, PYTHONPATH=str(prefix / "lib" / "python3.11" / "site-packages"))
    script = Path(__file__).with_name("resource_journal.py")
    argv = [str(prefix / "bin" / "flux"), "start", f"--config-path={config}", "--test-size=2"]
    argv += [f"--test-hosts={HOSTS}", "/usr/bin/python3", str(script), str(path)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    responses: list[dict[str, Any]] = json.loads(done.stdout)
    return responses


def simulated_journal(store: Store) -> list[dict[str, Any]]:
    mapping = RabbitMapping.load(sample_path("sample-rabbitmapping.json"))
    jm = JobManager(mapping, eventlog=store.resource_log)
    jm.resource.start()  # restart, resource-define, online: as the real one posts them
    for topic, payload in REQUESTS:
        jm.rpc(topic, dict(payload))
    responses = []
    for response in store.resource_log.journal(journal_max=JOURNAL_MAX):
        responses.append(response)
        if not response["events"]:
            break
    return responses


def shape(responses: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """Each event's name and the keys it has, each drain's or undrain's nodelist."""
    out = []
    for response in responses:
        for event in response["events"]:
            context = event.get("context", {})
            out.append((event["name"], *sorted(event), context.get("nodelist", "")))
    return out


def test_both_stream_a_truncate_then_the_newest_events(
    flux_prefix: Path, capped_config: Path, tmp_path: Path, store: Store
) -> None:
    real = real_journal(flux_prefix, capped_config, tmp_path)
    expected = [
        ("truncate", "name", "timestamp", ""),
        ("drain", "context", "name", "timestamp", "compute01"),
        ("undrain", "context", "name", "timestamp", "compute02"),
        ("undrain", "context", "name", "timestamp", "compute01"),
    ]
    assert shape(real) == expected
    assert shape(simulated_journal(store)) == expected


def test_the_bridge_mirrors_the_real_truncate_as_a_gap(
    flux_prefix: Path, capped_config: Path, tmp_path: Path, store: Store
) -> None:
    mirror = ResourceMirror(store.resource_log, hostlist=HOSTS)
    for response in real_journal(flux_prefix, capped_config, tmp_path):
        mirror.feed(response)
    events = store.resource_log.events()
    assert [e["name"] for e in events] == ["truncate", "drain", "undrain", "undrain"]
    assert events[0]["context"] == {"nodelist": HOSTS}

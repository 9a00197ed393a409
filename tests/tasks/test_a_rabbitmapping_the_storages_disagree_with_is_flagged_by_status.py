"""storage.observe notes where the rabbitmapping disagrees with a rabbit's Storage — a
compute the Storage lists that the mapping puts elsewhere (recabled), a compute the
mapping puts behind the rabbit that its Storage no longer lists — and ``status`` warns
with how to rebuild the mapping; once they agree again, the warning goes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from coral2_sim.kube.api import KubeApiServer

from pipeline.cli import main
from pipeline.clients.k8s import DwsClient
from tests.tasks.eager_app import store_of_app
from tests.tasks.test_a_storage_event_tells_flux_only_what_changed import app_with, run


def list_computes(dws: DwsClient, *computes: str) -> None:
    access = {"computes": [{"name": c, "status": "Ready"} for c in computes]}
    dws.patch("storages", "rabbit1", {"status": {"access": access}}, status=True)


def status_flags(app: Celery, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> list[str]:
    settings = app.conf.coral2_settings.pipeline
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__BROKER_URL", settings.broker_url)
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__KEY_PREFIX", settings.key_prefix)
    main(["status", "--json"])
    flags: list[str] = json.loads(capsys.readouterr().out)["flags"]
    return flags


def test_drift_is_noted_flagged_and_cleared(
    tmp_path: Path,
    redis_url: str,
    kube: tuple[KubeApiServer, DwsClient],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    app = app_with(tmp_path, redis_url, kube)  # the mapping: rabbit1 serves c1 and c2
    list_computes(kube[1], "c1", "c3")  # c2 recabled away, c3 recabled in
    health = run(app, "storage.observe", name="rabbit1")
    assert health["drift"] == {"c2": "-", "c3": ""}
    drift = [f for f in status_flags(app, monkeypatch, capsys) if "rabbitmapping" in f]
    assert len(drift) == 1
    assert "disagrees with the Storages on 2 compute(s) (c[2-3]" in drift[0]
    assert "coral2-pipeline rabbitmapping --from-storages" in drift[0]
    list_computes(kube[1], "c1", "c2")
    assert "drift" not in run(app, "storage.observe", name="rabbit1")
    assert not [f for f in status_flags(app, monkeypatch, capsys) if "rabbitmapping" in f]
    store_of_app(app).close()

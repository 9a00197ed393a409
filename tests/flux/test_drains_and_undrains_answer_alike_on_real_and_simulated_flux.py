"""The simulated resource service answers ``resource.drain`` and ``resource.undrain`` as
flux-core 0.88 itself does — modes, successes and each error text — checked side by side
against a real instance: what the bridge sends (an undrain with mode ``update``, drains
with mode ``update``) is accepted by both, and what the real Flux refuses (an undrain with
mode ``force``, a null mode) is refused by both, with the same words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.model.rabbitmap import RabbitMapping
from pipeline.services.bridge.delivery import translate
from pipeline.sim.demo.model import sample_path
from pipeline.sim.flux.jobmanager import JobManager
from pipeline.store import OutboxMessage
from tests.flux.conftest import answers, simulated_answers

REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("resource.drain", {"targets": "compute01", "reason": "a"}),
    ("resource.drain", {"targets": "compute01", "reason": "b"}),
    ("resource.drain", {"targets": "compute01", "mode": None}),
    ("resource.drain", {"targets": "compute01", "mode": "force"}),
    ("resource.drain", {"targets": "compute01", "reason": "b", "mode": "update"}),
    ("resource.undrain", {"targets": "compute02"}),
    ("resource.undrain", {"targets": "compute01", "mode": "force"}),
    ("resource.undrain", {"targets": "compute02", "mode": "update"}),
    ("resource.undrain", {"targets": "compute01"}),
    ("resource.drain", {"targets": "compute[01-02]", "reason": "x", "mode": "overwrite"}),
    ("resource.undrain", {"targets": "compute[01-02]", "mode": None}),
    # what the bridge sends for an outbox undrain and drain
    translate(OutboxMessage("undrain", 0, {"targets": "compute[01-02]"}), lambda h: h),
    translate(OutboxMessage("undrain", 0, {"targets": "compute01"}), lambda h: h),
    translate(
        OutboxMessage("drain", 0, {"targets": "compute02", "mode": "update", "reason": "r"}),
        lambda h: h,
    ),
]


def simulated() -> list[dict[str, Any]]:
    mapping = RabbitMapping.load(sample_path("sample-rabbitmapping.json"))
    return simulated_answers(JobManager(mapping), REQUESTS)


def test_each_request_gets_the_same_answer_from_both(
    flux_prefix: Path, flux_config: Path, tmp_path: Path
) -> None:
    real = [
        {"error": a["error"]} if "error" in a else {"ok": None}
        for a in answers(flux_prefix, flux_config, REQUESTS, tmp_path)
    ]
    assert simulated() == real
    assert real[6] == {"error": "invalid undrain mode 'force' specified"}  # the old bridge's
    assert "error" not in real[11] and "error" not in real[12] and "error" not in real[13]

"""A site whose DWS has no SystemStatus ``default`` (neither dws nor nnf-sos makes it, and
nnf runs without it) still gets its drains: computes that did not unmount are drained in
Flux all the same, the store notes the object missing, and ``status`` says so."""

from __future__ import annotations

import pytest
from coral2_sim.kube.api import KubeApiServer

from pipeline.cli import main
from pipeline.clients.k8s import DwsClient
from pipeline.errors import NotFound
from pipeline.model.job import JobRecord
from pipeline.perform import performer
from pipeline.states.actions import DisableComputes, SendOnce
from pipeline.store import Store


def test_the_drain_goes_to_flux_and_status_flags_the_missing_object(
    store: Store,
    redis_url: str,
    kube: tuple[KubeApiServer, DwsClient],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(NotFound):
        kube[1].get("systemstatuses", "default")  # this API server has none
    store.jobs.create(JobRecord(jobid=31))
    drain = SendOnce("drain", {"targets": "c1", "reason": "unmount failed"}, "drain:c1")
    assert performer.perform(store, kube[1], 31, [DisableComputes(("c1",)), drain])
    kinds = [m.message.kind for m in store.outbox.read("t", count=10)]
    assert kinds == ["drain"]
    assert store.systemstatus.missing() and store.systemstatus.disabled() == {"c1"}
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__BROKER_URL", redis_url)
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__KEY_PREFIX", store.keys.prefix)
    monkeypatch.delenv("CORAL2_PIPELINE_PIPELINE__REDIS_URL", raising=False)
    monkeypatch.delenv("CORAL2_PIPELINE_CONFIG", raising=False)
    main(["status", "--json"])
    assert "DWS has no SystemStatus default" in capsys.readouterr().out

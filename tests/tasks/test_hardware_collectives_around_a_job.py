"""Hardware collectives around a job, with the tasks run in-process against the simulated
fabric manager over HTTP: an eligible job gets its reservation, event and environment at
RUN (a rerun makes nothing twice); a fabric manager that is down or slow costs the job its
collectives, never the job, and the next jobs do not wait for it; the release at CLEANUP
is retried until the fabric manager answers; reconcile releases our reservations of
finished jobs, leaves other clusters' alone and fails a running job whose reservation
vanished; the token is in no task argument and no ``status -j``."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from celery import Celery
from celery.exceptions import Retry
from coral2_sim.fabric import FabricManagerSim

from pipeline.cli import main
from pipeline.store import Store
from tests.conftest import make_r
from tests.tasks import fabric_fixtures
from tests.tasks.eager_app import store_of_app

fm = fabric_fixtures.fm  # the fixtures: a fabric manager, an app that reaches it
app = fabric_fixtures.app


def run(app: Celery, task: str, **kwargs: Any) -> Any:
    return app.tasks[task].apply(kwargs=kwargs).get()


def start(app: Celery, jobid: int, R: dict[str, Any], **kwargs: Any) -> None:
    """The job reaches RUN: job.run reserves, then the job.prologs it sends posts and plans."""
    run(app, "job.run", jobid=jobid, userid=1001, R=R, **kwargs)
    run(app, "job.prologs", jobid=jobid, R=R)


def sent(store: Store) -> list[tuple[str, dict[str, Any]]]:
    entries: Any = store.client.xrange(store.keys.outbox)
    return [(f[b"kind"].decode(), json.loads(f[b"payload"])) for _, f in entries]


def hwcoll_events(store: Store) -> list[dict[str, Any]]:
    return [p["context"] for k, p in sent(store) if k == "event-post" and p["name"] == "hwcoll"]


def test_an_eligible_job_gets_its_reservation_event_and_environment_once(
    app: Celery, fm: FabricManagerSim
) -> None:
    store = store_of_app(app)
    for _ in range(2):  # a copy of job.run makes nothing twice
        start(app, 10, make_r("c[1-2]"))
    assert list(fm.reservations()) == ["elcap-10"]
    record = store.jobs.get(10)
    assert record is not None and record.hwcoll is not None
    assert hwcoll_events(store) == [
        {"jobID": "elcap-10", "mcastLimit": record.hwcoll.mcast_limit, "step": "10"}
    ]
    env = [
        p["value"] for k, p in sent(store) if k == "kvs-put" and p["key"] == "hwcoll_environment"
    ]
    assert len(env) == 1
    assert env[0]["FI_CXI_COLL_MCAST_TOKEN"] == record.hwcoll.token
    assert env[0]["FI_CXI_COLL_FABRIC_MGR_URL"] == fm.url + "/fabric/collectives/multicasts"


def test_a_small_job_that_does_not_ask_gets_none(app: Celery, fm: FabricManagerSim) -> None:
    start(app, 11, make_r("c1"))
    assert fm.reservations() == {}
    start(app, 12, make_r("c1"), hwcoll=True)
    assert list(fm.reservations()) == ["elcap-12"]


def test_a_down_or_slow_fabric_manager_costs_the_job_only_its_collectives(
    app: Celery, fm: FabricManagerSim
) -> None:
    store = store_of_app(app)
    fm.fault(slow_s=2.0)
    start(app, 13, make_r("c[1-2]"))
    assert store.jobs.get(13).hwcoll is None  # type: ignore[union-attr]
    reason = hwcoll_events(store)[0]["reason"]
    # the job waited for its own 0.5-s request timeout, not for the fabric manager's 2 s
    assert reason.startswith("hardware collectives off")
    assert any(t in reason for t in ("timed out", "no answer in 0.5 s", "no time left of 0.5 s"))
    assert store.releases.get(13) is None or store.releases.get(13).status == 0  # type: ignore[union-attr]
    fm.fault(slow_s=0.0, down=True)
    start(app, 14, make_r("c[1-2]"))
    assert "not answering" in hwcoll_events(store)[1]["reason"]  # skipped at once
    assert not any(e[0] == "exception" for e in sent(store))


def test_a_release_waits_for_the_fabric_manager_then_leaves_nothing(
    app: Celery, fm: FabricManagerSim
) -> None:
    store = store_of_app(app)
    start(app, 15, make_r("c[1-2]"))
    fm.fault(down=True)
    with pytest.raises(Retry):
        app.tasks["hwcoll.release"].apply(kwargs={"jobid": 15}, throw=True)
    assert list(fm.reservations()) == ["elcap-15"]
    fm.fault(down=False)
    assert run(app, "hwcoll.release", jobid=15) is True
    assert fm.reservations() == {}
    assert store.jobs.get(15).hwcoll.released  # type: ignore[union-attr]
    assert run(app, "hwcoll.release", jobid=15) is False  # a copy: nothing to do


def test_reconcile_releases_finished_jobs_keeps_others_and_fails_a_vanished_one(
    app: Celery, fm: FabricManagerSim
) -> None:
    store = store_of_app(app)
    for jobid in (16, 17):
        run(app, "job.run", jobid=jobid, userid=1001, R=make_r("c[1-2]"))
    token = fm.wlm_token()
    import httpx

    httpx.post(f"{fm.url}/fabric/collectives/jobs", json={"jobID": "tuolumne-16", "mcastLimit": 2},
               headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    store.flux_jobs.synced([16, 17], time.time())
    store.flux_jobs.inactive(16, time.time())
    fm.vanish("elcap-17")
    counts = run(app, "hwcoll.reconcile")
    assert counts == {"released": 1, "vanished": 1, "kept": 0}
    assert list(fm.reservations()) == ["tuolumne-16"]  # another cluster's: left alone
    failed = [p for k, p in sent(store) if k == "exception"]
    assert failed[0]["id"] == 17 and "vanished from the fabric manager" in failed[0]["note"]


def test_the_token_is_in_no_task_argument_and_no_status(
    app: Celery,
    fm: FabricManagerSim,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = store_of_app(app)
    start(app, 18, make_r("c[1-2]"))
    run(app, "job.cleanup", jobid=18)
    token = store.jobs.get(18).hwcoll.token  # type: ignore[union-attr]
    ledger: Any = store.client.hgetall(store.keys.ledger)
    assert token.encode() not in b"".join(ledger.values())
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__BROKER_URL", app.conf.broker_url)
    monkeypatch.setenv("CORAL2_PIPELINE_PIPELINE__KEY_PREFIX", store.keys.prefix)
    for argv in (["status", "-j", "18"], ["status", "-j", "18", "--json"]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert token not in out and "<redacted>" in out

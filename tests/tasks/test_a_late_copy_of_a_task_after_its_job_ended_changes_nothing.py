"""A copy of a task that starts a job's work — dws.create, dws.setup, job.run — arriving
after the pipeline finished the job changes nothing: no Workflow is created again, no
finished job is tracked again or gets an exception, no VNI is reserved again."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery

from pipeline.clients.k8s import DwsClient
from pipeline.errors import NotFound
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.platform.app import create_app
from pipeline.settings import load_settings
from pipeline.sim.kube.api import KubeApiServer
from pipeline.store import JobRecord, Keys, Store
from tests.conftest import make_r

TiB = 2**40


@pytest.fixture
def app(tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient]) -> Celery:
    mapping = RabbitMapping.build({"rabbit1": (64 * TiB, ["c1", "c2"])})
    (tmp_path / "mapping.json").write_text(mapping.model_dump_json())
    settings = load_settings(
        env={
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_url,
            "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": f"late-{uuid.uuid4().hex[:8]}",
            "CORAL2_PIPELINE_PIPELINE__API_HOST": kube[0].url,
            "CORAL2_PIPELINE_RABBIT__MAPPING": str(tmp_path / "mapping.json"),
        }
    )
    return create_app(settings, set_current=False)


@pytest.fixture
def store(app: Celery) -> Store:
    prefix = app.conf.coral2_settings.pipeline.key_prefix
    return Store(redis.Redis.from_url(app.conf.broker_url), Keys(prefix))


def run(app: Celery, name: str, **kwargs: Any) -> Any:
    return app.tasks[name].apply(kwargs=kwargs).get()


def outbox_kinds(store: Store) -> list[str]:
    entries: Any = store.client.xrange(store.keys.outbox)
    return [f[b"kind"].decode() for _, f in entries]


def ended_job(store: Store, jobid: int) -> None:
    store.jobs.create(JobRecord(jobid=jobid, userid=1001, workflow=f"fluxjob-{jobid}"))
    store.jobs.finish(jobid, retain_s=600)


def test_a_late_create_does_not_make_the_workflow_again(
    app: Celery, store: Store, kube: tuple[KubeApiServer, DwsClient]
) -> None:
    ended_job(store, 41)
    kinds = outbox_kinds(store)
    created = run(
        app, "dws.create", jobid=41, userid=1001,
        directives=["#DW jobdw type=xfs capacity=10GiB name=s"],
        resources=[], failure_tolerance=-1,
    )  # fmt: skip
    assert created is False
    with pytest.raises(NotFound):
        kube[1].get_workflow("fluxjob-41")
    assert 41 not in store.jobs.jobids()
    assert outbox_kinds(store) == kinds


def test_a_late_setup_neither_tracks_the_job_again_nor_raises_an_exception(
    app: Celery, store: Store
) -> None:
    ended_job(store, 42)
    assert run(app, "dws.setup", jobid=42, R=make_r("c[1-2]")) is False
    assert 42 not in store.jobs.jobids()
    assert "exception" not in outbox_kinds(store)


def test_a_late_run_reserves_no_vni(app: Celery, store: Store) -> None:
    ended_job(store, 43)
    assert run(app, "job.run", jobid=43, userid=1001, R=make_r("c[1-2]")) == []
    assert store.vnipool.holding(43) == []
    assert json.dumps(store.vnipool.query()["jobs"]) == "{}"

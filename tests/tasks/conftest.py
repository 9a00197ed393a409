"""The tasks' tests: an app whose tasks run in-process against the session's Redis and a
fresh API server, and its store (a module that needs other settings defines its own)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from celery import Celery
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.platform.sending import settings_of
from pipeline.store import Keys, Store
from tests.tasks.eager_app import eager_app, store_of_app


@pytest.fixture
def app(tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient]) -> Celery:
    return eager_app(tmp_path, redis_url, kube[0].url)


@pytest.fixture
def store(app: Celery) -> Store:
    return store_of_app(app)


@pytest.fixture
def resync_store(celery_app: Celery, worker: None) -> Iterator[Store]:
    """The store of the session's worker with no tracked job and no Workflow note: what a
    ``dws.resync`` test sets up is all the pass sees."""
    store = Store(
        redis.Redis.from_url(celery_app.conf.broker_url),
        Keys(settings_of(celery_app).pipeline.key_prefix),
    )
    for jobid in store.jobs.jobids():  # other tests' jobs are not this test's business
        store.jobs.finish(jobid, retain_s=60)
    store.client.delete(store.keys.workflow_seen, store.keys.resync_due)
    yield store
    store.client.close()

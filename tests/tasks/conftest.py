"""The tasks' tests: an app whose tasks run in-process against the session's Redis and a
fresh API server, and its store (a module that needs other settings defines its own)."""

from __future__ import annotations

from pathlib import Path

import pytest
from celery import Celery

from pipeline.clients.k8s import DwsClient
from pipeline.sim.kube.api import KubeApiServer
from pipeline.store import Store
from tests.tasks.eager_app import eager_app, store_of_app


@pytest.fixture
def app(tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient]) -> Celery:
    return eager_app(tmp_path, redis_url, kube[0].url)


@pytest.fixture
def store(app: Celery) -> Store:
    return store_of_app(app)

"""A simulated fabric manager, and an eager app of the pipeline reaching it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from celery import Celery
from coral2_sim.fabric import FabricManagerSim
from coral2_sim.kube.api import KubeApiServer

from pipeline.clients.k8s import DwsClient
from pipeline.tasks.hwcoll import close_fabric
from tests.tasks.eager_app import eager_app


@pytest.fixture
def fm() -> Iterator[FabricManagerSim]:
    with FabricManagerSim() as sim:
        yield sim


@pytest.fixture
def app(
    tmp_path: Path, redis_url: str, kube: tuple[KubeApiServer, DwsClient], fm: FabricManagerSim
) -> Iterator[Celery]:
    """Jobs of two nodes or more are eligible (cluster ``elcap``); no VNI is reserved."""
    auth = fm.write_credentials(tmp_path / "fm")
    app = eager_app(
        tmp_path, redis_url, kube[0].url,
        CORAL2_PIPELINE_HWCOLL__URL=fm.url,
        CORAL2_PIPELINE_HWCOLL__AUTH_DIR=str(auth),
        CORAL2_PIPELINE_HWCOLL__MIN_JOB_NODES="2",
        CORAL2_PIPELINE_HWCOLL__REQUEST_TIMEOUT="0.5",
        CORAL2_PIPELINE_HWCOLL__CLUSTER="elcap",
        CORAL2_PIPELINE_CRAY_SLINGSHOT__VNIS_PER_JOB="0",
    )  # fmt: skip
    yield app
    close_fabric(app)

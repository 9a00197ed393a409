"""A Celery app whose tasks the tests run in-process (``apply``), against the session's
Redis and simulated API server, with a one-rabbit mapping and a key prefix of its own."""

from __future__ import annotations

import uuid
from pathlib import Path

import redis
from celery import Celery

from pipeline.model.rabbitmap import RabbitMapping
from pipeline.platform.app import create_app
from pipeline.settings import load_settings
from pipeline.store import Keys, Store

TiB = 2**40


def eager_app(tmp_path: Path, redis_url: str, api_url: str, **env: str) -> Celery:
    """The app; ``env`` adds settings (``CORAL2_PIPELINE_…`` names)."""
    mapping = RabbitMapping.build({"rabbit1": (64 * TiB, ["c1", "c2"])})
    (tmp_path / "mapping.json").write_text(mapping.model_dump_json())
    settings = load_settings(
        env={
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": redis_url,
            "CORAL2_PIPELINE_PIPELINE__KEY_PREFIX": f"t-{uuid.uuid4().hex[:8]}",
            "CORAL2_PIPELINE_PIPELINE__API_HOST": api_url,
            "CORAL2_PIPELINE_RABBIT__MAPPING": str(tmp_path / "mapping.json"),
            **env,
        }
    )
    return create_app(settings, set_current=False)


def store_of_app(app: Celery) -> Store:
    """The store under the app's key prefix."""
    prefix = app.conf.coral2_settings.pipeline.key_prefix
    return Store(redis.Redis.from_url(app.conf.broker_url), Keys(prefix))

"""Celery gets our Redis transports for redis:// and sentinel:// brokers; rediss:// keeps
kombu's own, which takes its TLS set-up from the scheme."""

from __future__ import annotations

from pipeline.platform.app import create_app
from pipeline.platform.broker import RedisTransport, transport_for
from pipeline.settings import load_settings


def test_a_redis_url_gets_the_shared_client_transport() -> None:
    assert transport_for("redis://127.0.0.1:6379/0") == "pipeline.platform.broker:RedisTransport"


def test_a_sentinel_failover_list_gets_the_sentinel_transport() -> None:
    url = "sentinel://10.0.0.1:26379;sentinel://10.0.0.2:26379"
    assert transport_for(url) == "pipeline.platform.broker:SentinelTransport"


def test_a_tls_url_keeps_kombus_transport() -> None:
    assert transport_for("rediss://redis.example:6380/0") is None


def test_an_app_built_from_settings_connects_through_the_shared_client_transport() -> None:
    settings = load_settings(env={"CORAL2_PIPELINE_PIPELINE__BROKER_URL": "redis://127.0.0.1:1/0"})
    app = create_app(settings, set_current=False)
    assert app.conf.broker_transport == "pipeline.platform.broker:RedisTransport"
    with app.connection_for_write() as conn:  # builds the transport; connects to nothing
        assert isinstance(conn.transport, RedisTransport)

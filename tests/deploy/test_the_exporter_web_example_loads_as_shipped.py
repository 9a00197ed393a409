"""The shipped web configuration of the exporter (deploy/prometheus/exporter-web.yml)
loads as the exporter reads it: TLS with a client certificate required, and one basic
authentication user whose password is a bcrypt hash."""

from __future__ import annotations

from pathlib import Path

from pipeline.cli.exporter_web import load

EXAMPLE = Path(__file__).parents[2] / "deploy" / "prometheus" / "exporter-web.yml"


def test_the_example_loads_with_tls_and_one_user() -> None:
    config, base = load(str(EXAMPLE))
    assert base == EXAMPLE.parent  # relative paths from the file's own directory
    assert config.tls_server_config is not None
    assert config.tls_server_config.client_auth_type == "RequireAndVerifyClientCert"
    assert list(config.basic_auth_users) == ["prometheus"]

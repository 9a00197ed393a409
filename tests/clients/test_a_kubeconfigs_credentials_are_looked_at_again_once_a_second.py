"""A client made from a kubeconfig looks at its credentials again (the kubeconfig loader's
hook: a token near its expiry loaded again, the whole configuration set again) once a
second at most, not before every request; the bearer token is sent all the same."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.clients import kube_auth as kube


def kubeconfig(tmp_path: Path) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:6443"}}],
                "users": [{"name": "u", "user": {"token": "s3cret"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return str(path)


def test_within_the_second_the_configuration_is_not_set_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kube, "REFRESH_EVERY_S", 3600.0)
    configuration = kube.api_client(kubeconfig=kubeconfig(tmp_path)).configuration
    first = configuration.auth_settings()
    configuration.host = "http://elsewhere:6443"  # what the loader's hook would set back
    second = configuration.auth_settings()
    assert configuration.host == "http://elsewhere:6443"
    assert first["BearerToken"]["value"] == second["BearerToken"]["value"] == "Bearer s3cret"


def test_once_the_period_is_over_the_loaders_hook_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kube, "REFRESH_EVERY_S", 0.0)
    configuration = kube.api_client(kubeconfig=kubeconfig(tmp_path)).configuration
    configuration.auth_settings()
    configuration.host = "http://elsewhere:6443"
    configuration.auth_settings()
    assert configuration.host == "http://127.0.0.1:6443"

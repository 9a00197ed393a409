"""Message signing is configured whole or not at all, and refuses a key other users can
read, with the command that fixes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from celery import Celery
from coral2_sim.keys import demo_signers

from pipeline.errors import ConfigError
from pipeline.platform.signing import secure, signing_config
from pipeline.settings import load_settings


def test_a_partial_signing_configuration_says_what_is_missing() -> None:
    with pytest.raises(ConfigError, match="security_key, security_certificate and security"):
        load_settings(env={"CORAL2_PIPELINE_PIPELINE__SECURITY_KEY": "/etc/k.pem"})


def test_without_keys_nothing_is_signed() -> None:
    assert signing_config(load_settings(env={}).pipeline) == {}


def test_a_key_others_can_read_is_refused(tmp_path: Path) -> None:
    management, _ = demo_signers(tmp_path)
    management.key.chmod(0o644)
    settings = load_settings(env=management.env())
    with pytest.raises(ConfigError, match=f"chmod 600 {management.key}"):
        secure(Celery(set_as_current=False), settings.pipeline)


def test_signing_makes_auth_the_only_accepted_task_content(tmp_path: Path) -> None:
    management, _ = demo_signers(tmp_path)
    config = signing_config(load_settings(env=management.env()).pipeline)
    assert (config["task_serializer"], config["accept_content"]) == ("auth", ["auth"])

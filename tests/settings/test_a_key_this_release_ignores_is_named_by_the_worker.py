"""``pipeline.visibility_timeout`` meant something while kombu kept an unacked hash; it
still loads, so that an older release's configuration does, and a worker starting with it
says once that it is ignored."""

from __future__ import annotations

import logging

import pytest

from pipeline.platform.supervision import name_ignored
from pipeline.settings import load_settings


def test_a_configuration_that_sets_it_still_loads_and_names_it() -> None:
    settings = load_settings(env={"CORAL2_PIPELINE_PIPELINE__VISIBILITY_TIMEOUT": "3"})
    assert settings.pipeline.ignored() == ["visibility_timeout"]


def test_one_that_does_not_names_nothing() -> None:
    assert load_settings(env={}).pipeline.ignored() == []


def test_the_worker_says_so_as_it_starts(caplog: pytest.LogCaptureFixture) -> None:
    settings = load_settings(env={"CORAL2_PIPELINE_PIPELINE__VISIBILITY_TIMEOUT": "3"})
    with caplog.at_level(logging.WARNING, logger="coral2_pipeline.platform"):
        name_ignored(settings)
    assert "pipeline.visibility_timeout is set but ignored by this release" in caplog.text

"""The Redis password comes from a file of mode 0600 and goes into every Redis URL; a
password file, a signing key, or a config file holding a password inline that other
users can read is refused with one line naming the file and the chmod that fixes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import ConfigError
from pipeline.settings import load_settings


def write(path: Path, text: str, mode: int) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def test_the_password_file_fills_every_redis_url(tmp_path: Path) -> None:
    secret = write(tmp_path / "redis.pass", "s3cr:t/\n", 0o600)
    config = write(
        tmp_path / "site.toml",
        "[pipeline]\n"
        'broker_url = "redis://redis1:6380/0"\n'
        'redis_url = "sentinel://s1:26379;sentinel://s2:26379"\n'
        'redis_username = "workers"\n'
        f'redis_password_file = "{secret}"\n',
        0o644,  # holds no secret: others may read it
    )
    pipeline = load_settings(config, env={}).pipeline
    assert pipeline.broker_url == "redis://workers:s3cr%3At%2F@redis1:6380/0"
    assert pipeline.redis_url == (
        "sentinel://workers:s3cr%3At%2F@s1:26379;sentinel://workers:s3cr%3At%2F@s2:26379"
    )
    assert pipeline.result_backend is None  # unset: the broker's, with its credentials


def test_the_stores_sentinel_form_with_several_hosts_gets_them_too(tmp_path: Path) -> None:
    secret = write(tmp_path / "redis.pass", "pw", 0o600)
    env = {
        "CORAL2_PIPELINE_PIPELINE__REDIS_URL": "sentinel://m1:26379,m2:26379/coral2?db=0",
        "CORAL2_PIPELINE_PIPELINE__REDIS_PASSWORD_FILE": str(secret),
    }
    pipeline = load_settings(env=env).pipeline
    assert pipeline.redis_url == "sentinel://:pw@m1:26379,m2:26379/coral2?db=0"


def test_a_password_file_others_can_read_is_refused(tmp_path: Path) -> None:
    secret = write(tmp_path / "redis.pass", "pw\n", 0o640)
    env = {"CORAL2_PIPELINE_PIPELINE__REDIS_PASSWORD_FILE": str(secret)}
    with pytest.raises(ConfigError) as raised:
        load_settings(env=env)
    assert str(raised.value) == (
        f"pipeline.redis_password_file {str(secret)!r} can be read by other users "
        f"(mode 640); run: chmod 600 {secret}"
    )


def test_a_config_file_with_an_inline_password_must_be_private(tmp_path: Path) -> None:
    text = '[pipeline]\nbroker_url = "redis://:hunter2@redis1:6379/0"\n'
    config = write(tmp_path / "site.toml", text, 0o644)
    with pytest.raises(ConfigError, match=r"config file .* can be read by other users"):
        load_settings(config, env={})
    config.chmod(0o600)
    assert load_settings(config, env={}).pipeline.broker_url.endswith("@redis1:6379/0")


def test_a_password_in_both_the_url_and_a_file_is_refused(tmp_path: Path) -> None:
    secret = write(tmp_path / "redis.pass", "pw", 0o600)
    env = {
        "CORAL2_PIPELINE_PIPELINE__BROKER_URL": "redis://:inline@r:6379/0",
        "CORAL2_PIPELINE_PIPELINE__REDIS_PASSWORD_FILE": str(secret),
    }
    with pytest.raises(ConfigError, match="remove the password from the URL"):
        load_settings(env=env)


def test_a_missing_or_empty_password_file_is_one_clear_error(tmp_path: Path) -> None:
    env = {"CORAL2_PIPELINE_PIPELINE__REDIS_PASSWORD_FILE": str(tmp_path / "nope")}
    with pytest.raises(ConfigError, match="No such file or directory"):
        load_settings(env=env)
    empty = write(tmp_path / "empty", "\n", 0o600)
    env["CORAL2_PIPELINE_PIPELINE__REDIS_PASSWORD_FILE"] = str(empty)
    with pytest.raises(ConfigError, match="must hold the password alone"):
        load_settings(env=env)

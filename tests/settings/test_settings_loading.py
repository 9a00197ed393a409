"""Settings load from TOML with environment overrides and name every bad key."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import ConfigError
from pipeline.settings import load_settings


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "flux.toml"
    path.write_text(text)
    return path


def test_defaults_match_flux_coral2() -> None:
    s = load_settings(env={})
    assert (s.rabbit.tc_timeout, s.rabbit.drain_compute_nodes, s.rabbit.soft_drain) == (
        10.0,
        True,
        True,
    )
    assert (s.rabbit.save_datamovements, s.rabbit.restrict_persistent_creation) == (0, True)
    assert (s.rabbit.setup_timeout, s.rabbit.prolog_timeout, s.rabbit.epilog_timeout) == (
        0.0,
        1800.0,
        0.0,
    )
    assert s.rabbit.policy.maximums.xfs is None
    assert (s.cray_slingshot.vni_pool, s.cray_slingshot.vnis_per_job) == ("1024-65535", 1)
    assert (s.cray_slingshot.vni_reserve_fatal, s.cray_slingshot.cxi_enable) == (True, False)


def test_a_flux_config_is_read_and_foreign_flux_tables_are_ignored(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[job-manager]
plugins = [{ load = "dws-jobtap.so" }]
[rabbit]
tc_timeout = 5
prolog_timeout = "30m"
epilog_timeout = 5400
presets = { fast = "#DW jobdw type=xfs capacity=1GiB name=x1" }
[rabbit.policy.maximums]
lustre = 100
[cray-slingshot]
vni-pool = "2000-2999"
cxi-enable = true
""",
    )
    s = load_settings(path, env={})
    assert s.rabbit.tc_timeout == 5.0
    assert s.rabbit.prolog_timeout == 1800.0
    assert s.rabbit.epilog_timeout == 5400.0
    assert s.rabbit.policy.maximums.lustre == 100
    assert s.rabbit.presets == {"fast": "#DW jobdw type=xfs capacity=1GiB name=x1"}
    assert (s.cray_slingshot.vni_pool, s.cray_slingshot.cxi_enable) == ("2000-2999", True)


def test_restrict_persistent_is_an_alias_that_is_honoured(tmp_path: Path) -> None:
    s = load_settings(write(tmp_path, "[rabbit]\nrestrict_persistent = false\n"), env={})
    assert s.rabbit.restrict_persistent_creation is False


def test_every_unknown_key_is_named_with_its_table_and_the_accepted_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path, "[rabbit]\nbogus = 1\nalso_bogus = 2\n[cray-slingshot]\nvni_pool = '1-2'\n"
    )
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    text = str(info.value)
    assert "unknown key 'bogus' in table [rabbit]" in text
    assert "unknown key 'also_bogus' in table [rabbit]" in text
    assert "unknown key 'vni_pool' in table [cray-slingshot]; accepted keys: vni-pool" in text
    assert "tc_timeout" in text


def test_wrong_types_name_key_value_and_expected_type(tmp_path: Path) -> None:
    path = write(tmp_path, "[rabbit]\ntc_timeout = 'soon'\ndrain_compute_nodes = 'yes'\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    text = str(info.value)
    assert "rabbit.tc_timeout = 'soon': wrong type, expected a number" in text
    assert "rabbit.drain_compute_nodes = 'yes': wrong type, expected true or false" in text


def test_slingshot_values_are_range_checked_with_the_plugins_message(tmp_path: Path) -> None:
    path = write(tmp_path, "[cray-slingshot]\nvnis-per-job = 5\nvni-pool = '1-100'\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    assert "cray-slingshot.vnis-per-job value out of range (0-4)" in str(info.value)
    assert "must be a subset of 0,2-9,11-65535" in str(info.value)


def test_policy_must_only_hold_maximums(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'minimums' in table \[rabbit.policy\]"):
        load_settings(write(tmp_path, "[rabbit.policy.minimums]\nxfs = 1\n"), env={})


def test_unknown_tables_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown table \[rabit\]"):
        load_settings(write(tmp_path, "[rabit]\ntc_timeout = 1\n"), env={})


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "[rabbit]\ntc_timeout = 5\n")
    env = {
        "CORAL2_PIPELINE_RABBIT__TC_TIMEOUT": "7",
        "CORAL2_PIPELINE_RABBIT__POLICY__MAXIMUMS__XFS": "64",
        "CORAL2_PIPELINE_CRAY_SLINGSHOT__VNI_RESERVE_FATAL": "false",
        "CORAL2_PIPELINE_PIPELINE__BROKER_URL": "redis://db:6380/1",
    }
    s = load_settings(path, env=env)
    assert s.rabbit.tc_timeout == 7.0
    assert s.rabbit.policy.maximums.xfs == 64
    assert s.cray_slingshot.vni_reserve_fatal is False
    assert s.pipeline.broker_url == "redis://db:6380/1"


def test_the_config_file_can_come_from_the_environment(tmp_path: Path) -> None:
    path = write(tmp_path, "[rabbit]\nsetup_timeout = 60\n")
    assert load_settings(env={"CORAL2_PIPELINE_CONFIG": str(path)}).rabbit.setup_timeout == 60.0


def test_an_unknown_environment_variable_is_named() -> None:
    misspelt = "CORAL2_PIPELINE_RABBIT__TC_TIMOUT"
    with pytest.raises(ConfigError, match=f"{misspelt} names no setting"):
        load_settings(env={misspelt: "1"})


def test_missing_and_malformed_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_settings(tmp_path / "nope.toml", env={})
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_settings(write(tmp_path, "[rabbit\n"), env={})

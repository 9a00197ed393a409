"""``vni-pool = ""`` would make every job's reservation fail: the settings refuse it,
saying how to have a pool or no VNIs at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import ConfigError
from pipeline.settings import load_settings


def test_an_empty_pool_is_a_settings_error_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "site.toml"
    path.write_text('[cray-slingshot]\nvni-pool = ""\n')
    with pytest.raises(ConfigError) as refused:
        load_settings(str(path))
    text = str(refused.value)
    assert "cray-slingshot.vni-pool" in text and "vni-pool is empty" in text
    assert "vnis-per-job = 0" in text

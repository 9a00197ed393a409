"""A settings file that cannot be read as settings is one clear error naming it, whatever
is wrong: bytes that are not UTF-8, a directory, tables nested past any sense, or a
flood of unknown keys (twenty listed, then how many more)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import ConfigError
from pipeline.settings import load_settings


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_bytes(b"[pipeline]\nkey_prefix = '\xff\xfe'\n")
    with pytest.raises(ConfigError, match=r"config file '.*bad.toml' is not UTF-8 text"):
        load_settings(path, env={})


def test_a_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory, not a file"):
        load_settings(tmp_path, env={})


def test_deep_nesting_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.toml"
    path.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={})
    assert "deep.toml" in str(caught.value)
    assert len(str(caught.value).splitlines()) <= 2


def test_a_flood_of_unknown_keys_lists_twenty_then_counts_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "many.toml"
    path.write_text("[pipeline]\n" + "".join(f"k{n} = 1\n" for n in range(5000)))
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={})
    lines = str(caught.value).splitlines()
    assert len(lines) == 22  # the heading, twenty problems, and how many more
    assert lines[-1] == "  - and 4980 more"

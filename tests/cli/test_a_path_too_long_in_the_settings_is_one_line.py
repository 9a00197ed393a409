"""A path of 100,000 characters in the settings (``rabbit.mapping`` in the config file) is
one line naming it, cut, with its length, and exit 3 — where ``getrabbit`` looking for the
file raised "File name too long" as a traceback."""

from __future__ import annotations

from pathlib import Path

from tests.cli.walker import run


def test_a_mapping_path_too_long_is_one_settings_line(tmp_path: Path) -> None:
    config = tmp_path / "site.toml"
    config.write_text(f'[rabbit]\nmapping = "{"a" * 100_000}"\n')
    outcome = run(["getrabbit", "-c", "compute01"], {"CORAL2_PIPELINE_CONFIG": str(config)})
    assert outcome.status == 3, outcome.stderr
    [line] = outcome.stderr.strip().splitlines()
    assert line.startswith("coral2-pipeline getrabbit: the path 'aaaa")
    assert "(100,000 characters) is too long: File name too long" in line

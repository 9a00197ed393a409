"""``coral2-pipeline flower -- --port=N`` checks N as every port option is checked
(Flower itself would wrap 99999 round to a port nobody asked for): one line, exit 2."""

from __future__ import annotations

import pytest

from pipeline.cli import main


@pytest.mark.parametrize("options", [["--port=99999"], ["--port", "0"], ["--port=nan"]])
def test_a_port_out_of_range_is_one_usage_line(
    options: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FLOWER_BASIC_AUTH", "admin:secret")
    assert main(["flower", "--", *options]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("coral2-pipeline flower: --port: ")

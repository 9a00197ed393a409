"""`coral2-pipeline flux-bridge` says what to install when flux-python is missing."""

from __future__ import annotations

import importlib.util

import pytest

from pipeline.cli import main


@pytest.mark.skipif(importlib.util.find_spec("flux") is not None, reason="flux-python present")
def test_without_flux_python_the_bridge_fails_with_one_line_naming_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["flux-bridge"]) == 3  # a configuration error: its unit does not restart
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("coral2-pipeline flux-bridge: needs flux-python")
    assert "pip install 'coral2-pipeline[flux]'" in err
    assert "Traceback" not in err and err.count("\n") == 1

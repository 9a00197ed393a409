"""Helpers of the ``coral2-pipeline status`` tests (their fixtures: ``conftest.py``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

#: Runs ``coral2-pipeline status ARGV``; returns (exit status, stdout, stderr).
Status = Callable[..., tuple[int, str, str]]


def as_json(status: Status, *argv: str) -> tuple[int, dict[str, Any]]:
    """Run it with ``--json``; return (exit status, the parsed object)."""
    code, out, err = status(*argv, "--json")
    assert err == "", err
    return code, json.loads(out)

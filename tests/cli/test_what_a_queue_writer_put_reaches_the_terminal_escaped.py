"""A dead letter's text comes from whoever wrote onto a queue: ``deadletters`` and
``status`` show its escape sequences, carriage returns and bidi overrides escaped, and no
rich markup read from it — the admin's terminal is never driven by a message."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import redis

from pipeline.cli.common import printable
from pipeline.platform.deadletters import set_aside

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "\x1b]0;owned\x07\x1b[2J\rfine[red]looks[/] \u202eevil"


def test_printable_escapes_control_and_format_characters() -> None:
    shown = printable(HOSTILE)
    assert "\x1b" not in shown and "\x07" not in shown and "\r" not in shown
    assert "\u202e" not in shown
    assert shown.startswith("\\x1b]0;owned\\x07")
    assert "\\u202e" in shown
    assert printable("plain text: ok") == "plain text: ok"


def run(command: str, redis_url: str, prefix: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")}
    env["CORAL2_PIPELINE_PIPELINE__BROKER_URL"] = redis_url
    env["CORAL2_PIPELINE_PIPELINE__KEY_PREFIX"] = prefix
    env["COLUMNS"] = "400"
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", command],
        capture_output=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    return done.stdout.decode("utf-8", "replace")


def test_deadletters_shows_a_hostile_message_escaped(redis_url: str) -> None:
    prefix = f"esc-{uuid.uuid4().hex[:8]}"
    with redis.Redis.from_url(redis_url) as client:
        set_aside(client, prefix, f"node.c1{HOSTILE}", HOSTILE.encode(), f"refused: {HOSTILE}")
    out = run("deadletters", redis_url, prefix)
    assert "\\x1b]0;owned" in out
    assert "\x1b]0;owned" not in out and "\r" not in out and "\u202e" not in out
    assert "[red]looks[/]" in out  # shown, not read as markup

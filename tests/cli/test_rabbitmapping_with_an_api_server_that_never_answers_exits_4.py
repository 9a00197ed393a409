"""``rabbitmapping`` against an API server that accepts connections and never answers —
over http, or with https pointed at it — ends in one line with exit 4 once its one
request's bound (``ONE_SHOT_TIMEOUT_S``) has passed, each request tried once; before, it
ran past two minutes."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.clients.kube import ONE_SHOT_TIMEOUT_S
from tests import silent_server

silent = silent_server.silent  # the fixture


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_silent_server_is_one_line_and_exit_4_within_the_bound(
    tmp_path: Path, silent: tuple[int, list[socket.socket]], scheme: str
) -> None:
    silent_port, held = silent
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: '{scheme}://127.0.0.1:{silent_port}', "
        "insecure-skip-tls-verify: true}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "users: [{name: u, user: {token: x}}]\n"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "rabbitmapping", "-k", str(kubeconfig)],
        capture_output=True, text=True, timeout=300, check=False, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    took = time.monotonic() - started
    assert done.returncode == 4, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("coral2-pipeline rabbitmapping: Kubernetes API unreachable")
    assert took >= ONE_SHOT_TIMEOUT_S  # it waited for its bound (a busy machine: longer)
    assert done.stdout == ""
    assert len(held) == 1  # one request, not tried again

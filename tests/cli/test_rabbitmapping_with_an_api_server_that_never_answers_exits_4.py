"""``rabbitmapping`` against an API server that accepts connections and never answers —
over http, or with https pointed at it — ends in one line with exit 4 once its one
request's bound (``ONE_SHOT_TIMEOUT_S``) has passed, each request tried once; before, it
ran past two minutes."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.clients.kube import ONE_SHOT_TIMEOUT_S


@pytest.fixture
def silent() -> Iterator[tuple[int, list[socket.socket]]]:
    """A loopback port that accepts every connection and never sends a byte, and the
    connections it accepted."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    stop, held = threading.Event(), []

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], held
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    server.close()


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

"""Waiting for a service the test started to answer HTTP."""

from __future__ import annotations

import ssl
import subprocess
import time
from pathlib import Path

import httpx


def wait_until_served(
    url: str,
    process: subprocess.Popen[bytes],
    log: Path,
    timeout_s: float = 120,
    *,
    verify: ssl.SSLContext | bool = True,
) -> None:
    """Return once ``url`` answers anything (over TLS, trusting ``verify``); fail with the
    process's log if it exits first, or with a line saying so after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            httpx.get(url, timeout=5, verify=verify)
            return
        except httpx.TransportError:
            assert process.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, f"{url} never answered"
            time.sleep(0.1)

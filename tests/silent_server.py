"""A loopback server that accepts every connection and never answers: the peer a
one-shot command must give up on within its bound."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest


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

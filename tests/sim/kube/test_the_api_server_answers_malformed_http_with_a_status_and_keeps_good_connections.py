"""The simulated API server parses HTTP itself: bad requests get 400/431, good ones keep alive.

Its own request parser (the standard library's took half its time per
request) must still behave as an HTTP/1.1 server: a keep-alive connection
serves request after request, each answered whole; a malformed request
line or header line is answered 400 and the connection closed; oversized
headers 431; an HTTP/1.0 request without keep-alive closes after its
answer. Spoken over a raw socket, since no client library sends garbage.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest
from coral2_sim.kube.api import KubeApiServer

WORKFLOWS = "/apis/dataworkflowservices.github.io/v1alpha7/namespaces/default/workflows"


@pytest.fixture(scope="module")
def server() -> Iterator[KubeApiServer]:
    with KubeApiServer() as api:
        yield api


class Connection:
    """One raw HTTP connection to the server, with a reader for its answers."""

    def __init__(self, server: KubeApiServer) -> None:
        host, port = server.url.removeprefix("http://").split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.reader = self.sock.makefile("rb")

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.reader.close()
        self.sock.close()

    def send(self, text: str) -> None:
        self.sock.sendall(text.encode())

    def answer(self) -> tuple[int, dict[str, str], bytes]:
        """Read one answer: (status, headers with lower-case names, body)."""
        status = int(self.reader.readline().split()[1])
        headers: dict[str, str] = {}
        while (line := self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        return status, headers, self.reader.read(int(headers.get("content-length", "0")))

    def closed(self) -> bool:
        """Whether the server closed the connection (nothing more to read)."""
        return self.reader.read(1) == b""


def test_a_keep_alive_connection_serves_requests_one_after_another(
    server: KubeApiServer,
) -> None:
    with Connection(server) as conn:
        for _ in range(3):
            conn.send(f"GET {WORKFLOWS} HTTP/1.1\r\nHost: x\r\n\r\n")
            status, headers, body = conn.answer()
            assert status == 200
            assert headers["content-type"] == "application/json"
            assert headers["date"].endswith("GMT")
            assert json.loads(body)["kind"] == "WorkflowList"


@pytest.mark.parametrize(
    "request_text",
    [
        "GARBAGE\r\n\r\n",
        f"GET {WORKFLOWS} HTTP/2.0\r\n\r\n",
        f"GET {WORKFLOWS} HTTP/1.1\r\nno colon here\r\n\r\n",
        f"GET {WORKFLOWS} HTTP/1.1\r\n: no name\r\n\r\n",
    ],
    ids=["no-version", "http2", "header-without-colon", "header-without-name"],
)
def test_a_malformed_request_gets_400_and_the_connection_closes(
    server: KubeApiServer, request_text: str
) -> None:
    with Connection(server) as conn:
        conn.send(request_text)
        status, _, body = conn.answer()
        assert status == 400
        assert b"want" in body  # says what a good one looks like
        assert conn.closed()


def test_oversized_headers_get_431(server: KubeApiServer) -> None:
    with Connection(server) as conn:
        conn.send(f"GET {WORKFLOWS} HTTP/1.1\r\nX-Big: {'a' * 70000}\r\n\r\n")
        assert conn.answer()[0] == 431


def test_too_many_header_lines_get_431(server: KubeApiServer) -> None:
    many = "".join(f"X-{i}: {i}\r\n" for i in range(150))
    with Connection(server) as conn:
        conn.send(f"GET {WORKFLOWS} HTTP/1.1\r\n{many}\r\n")
        assert conn.answer()[0] == 431


def test_an_http_1_0_request_closes_after_its_answer(server: KubeApiServer) -> None:
    with Connection(server) as conn:
        conn.send(f"GET {WORKFLOWS} HTTP/1.0\r\n\r\n")
        assert conn.answer()[0] == 200
        assert conn.closed()


def test_connection_close_is_honoured(server: KubeApiServer) -> None:
    with Connection(server) as conn:
        conn.send(f"GET {WORKFLOWS} HTTP/1.1\r\nConnection: close\r\n\r\n")
        assert conn.answer()[0] == 200
        assert conn.closed()


@pytest.mark.parametrize("length", ["abc", "-1", "1e3", "٣"])
def test_a_bad_content_length_gets_go_s_400_and_the_connection_closes(
    server: KubeApiServer, length: str
) -> None:
    with Connection(server) as conn:
        conn.send(f"POST {WORKFLOWS} HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n{{}}")
        status, _, body = conn.answer()
        assert (status, body) == (400, b"400 Bad Request: bad Content-Length")
        assert conn.closed()


def test_a_body_past_the_limit_gets_413_without_being_held(server: KubeApiServer) -> None:
    with Connection(server) as conn:
        conn.send(f"POST {WORKFLOWS} HTTP/1.1\r\nHost: x\r\nContent-Length: {2**40}\r\n\r\n")
        status, _, body = conn.answer()
        assert status == 413
        assert "Request entity too large" in json.loads(body)["message"]
        assert conn.closed()

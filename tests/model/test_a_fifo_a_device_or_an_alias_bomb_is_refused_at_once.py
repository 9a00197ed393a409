"""The one file reader refuses what is not a regular file before it reads: a FIFO (which
would block for ever waiting for a writer), a device, a socket. Its YAML is measured
without expanding aliases: a "billion laughs" of 400 bytes, which expands to 387 million
values, and a value that holds itself are refused at once, in one line naming the file;
aliases a real file uses go through."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from pipeline.model.files import FileProblem, load, read_text

BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "mapping.json"
    os.mkfifo(fifo)
    done: list[str] = []
    reader = threading.Thread(target=lambda: done.append(_refusal(fifo)), daemon=True)
    reader.start()
    reader.join(timeout=30)  # a blocked open would never return
    assert done == [f"the mapping '{fifo}' is a FIFO (named pipe), not a regular file"]


def _refusal(path: Path) -> str:
    try:
        read_text(path, "the mapping")
    except FileProblem as exc:
        return str(exc)
    return "read"


def test_a_device_and_a_socket_are_refused(tmp_path: Path) -> None:
    assert _refusal(Path("/dev/zero")) == "the mapping '/dev/zero' is a device, not a regular file"
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        assert _refusal(path).endswith("is a socket, not a regular file")


def test_a_billion_laughs_is_refused_without_expanding_it(tmp_path: Path) -> None:
    bomb = tmp_path / "rbac.yaml"
    bomb.write_text(BOMB)
    with pytest.raises(FileProblem, match="comes to more than 2,000,000 values"):
        load(bomb, "the RBAC manifest", "yaml")


def test_a_value_holding_itself_is_refused(tmp_path: Path) -> None:
    loop = tmp_path / "kubeconfig"
    loop.write_text("a: &a [*a]\n")
    with pytest.raises(FileProblem, match="holds itself"):
        load(loop, "kubeconfig", "yaml")


def test_aliases_a_real_file_uses_go_through(tmp_path: Path) -> None:
    shared = tmp_path / "values.yaml"
    shared.write_text("defaults: &d {retries: 3}\none: *d\ntwo: *d\n")
    (document,) = load(shared, "the values", "yaml")
    assert document["one"] == document["two"] == {"retries": 3}

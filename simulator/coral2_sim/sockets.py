"""How many connections a process holds to a server port, read from Linux's ``/proc``
(the benchmarks and tests that count a node worker's broker connections)."""

from __future__ import annotations

import os
from pathlib import Path

ESTABLISHED = "01"


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def connections(pid: int, port: int) -> int:
    """How many established TCP connections process ``pid`` holds to ``port``."""
    inodes = _socket_inodes(pid)
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            state, inode = fields[3], fields[9]
            if state == ESTABLISHED and inode in inodes and remote_port == port:
                count += 1
    return count

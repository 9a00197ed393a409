"""A SIGKILLed demo, benchmark or test run leaves none of its child processes running.

Its children (here a redis-server, started as the simulated system starts
every child) would otherwise hold their ports and CPU forever: the parent
had no chance to stop them. A throw-away parent process starts one, prints
its pid, and is killed; the child must be gone soon after.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

PARENT = """
import sys, time
from coral2_sim.redis_server import RedisServer
server = RedisServer().start()
print(server.process.pid, flush=True)
time.sleep(600)
"""


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def test_a_killed_parent_takes_its_redis_server_with_it() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert _running(child)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 30
        while _running(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(child), f"redis-server {child} outlived its killed parent"
    finally:
        if _running(child):
            os.kill(child, signal.SIGKILL)
        parent.stdout.close()

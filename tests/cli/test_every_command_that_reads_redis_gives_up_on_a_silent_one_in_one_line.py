"""Every one-shot command that reads the store, pointed at a Redis that accepts
connections and never answers, gives up once the store's socket timeout has passed: one
line naming the timeout, exit 4 (``status``, a Nagios plugin, says it in one line on
stdout and exits 2, CRITICAL). None waits on the silent server for longer than its bound."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from tests import silent_server

silent = silent_server.silent  # the fixture

COMMANDS = [
    ["job", "show", "1"],
    ["deadletters"],
    ["recover"],
    ["slingshot", "pool"],
    ["slingshot", "clean", "compute01"],
    ["resource", "status"],
    ["resource", "journal"],
]


def test_each_gives_up_in_one_line(silent: tuple[int, list[socket.socket]]) -> None:
    port, held = silent
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CORAL2_PIPELINE_")},
        "CORAL2_PIPELINE_PIPELINE__BROKER_URL": f"redis://127.0.0.1:{port}/0",
    }
    every = [*COMMANDS, ["status"]]
    running = [  # all at once: each waits on the silent server, not on the CPU
        subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli", *argv],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in every
    ]
    answers = [p.communicate(timeout=120) for p in running]
    assert held, "no command reached the silent server"
    said = f"Redis unavailable: Timeout reading from 127.0.0.1:{port}"
    for argv, process, (_, err) in zip(COMMANDS, running, answers, strict=False):
        assert process.returncode == 4, (argv, err)
        [line] = err.strip().splitlines()
        assert line.startswith("coral2-pipeline ") and line.endswith(said), (argv, line)
    status, (out, err) = running[-1], answers[-1]
    assert status.returncode == 2 and err == "", (out, err)
    [line] = out.strip().splitlines()
    assert line.startswith("CRITICAL: Redis at ") and line.endswith(said), line

"""The firewall rule deploy/ ships for every compute (``deploy/nftables``) lets only root
— the node worker and the per-rank prolog — connect to Redis: in a network namespace of
its own, with the rule loaded by the real ``nft`` (Redis's address set to loopback), a
connection from root reaches a real ``redis-server`` and one from any other user (uid
65534, a job's user) is refused before Redis counts it against ``maxclients``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

RULE = Path(__file__).resolve().parents[2] / "deploy" / "nftables" / "coral2-pipeline-compute.nft"
PORT = 6391

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace and nft need root"),
    pytest.mark.skipif(shutil.which("nft") is None, reason="needs nft (make test installs it)"),
]

#: Run inside ``unshare --net``: loopback up, the rule, Redis, then a connection as each user.
SCRIPT = """
set -e
ip link set lo up
nft -f {rule}
redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \\
    --dir {work} --logfile {work}/redis.log
for _ in $(seq 100); do {python} -c "{probe}" 2>/dev/null && break; sleep 0.1; done
echo "root: $({python} -c "{probe}" 2>&1)"
echo "nobody: $(setpriv --reuid=65534 --regid=65534 --clear-groups {python} -c "{probe}" 2>&1)"
echo "counted: $(nft list table inet coral2_pipeline | grep -o 'packets [0-9]*')"
redis-cli -p {port} shutdown nosave >/dev/null 2>&1 || true
"""
PROBE = (
    "import socket\n"
    "try:\n"
    " s = socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
    " s.sendall(b'PING\\\\r\\\\n'); print(s.recv(64).decode().strip())\n"
    "except OSError as e: print(type(e).__name__)"
)


def test_root_reaches_redis_and_another_user_is_refused(tmp_path: Path) -> None:
    rule = tmp_path / "rule.nft"
    text = RULE.read_text()
    text = text.replace("{ 10.0.0.10, 10.0.0.11 }", "{ 127.0.0.1 }")
    rule.write_text(text.replace("{ 6379, 26379 }", f"{{ {PORT} }}"))
    tmp_path.chmod(0o755)
    script = SCRIPT.format(
        rule=rule, port=PORT, work=tmp_path, python=sys.executable, probe=PROBE.format(port=PORT)
    )
    done = subprocess.run(
        ["unshare", "--net", "sh", "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    assert lines["root"] == "+PONG"
    assert lines["nobody"] in ("ConnectionRefusedError", "ConnectionResetError")
    assert lines["counted"] != "packets 0"

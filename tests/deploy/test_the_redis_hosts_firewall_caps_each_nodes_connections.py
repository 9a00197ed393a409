"""The firewall rules deploy/ ships load with the real ``nft`` (``nft -c``), and the Redis
hosts' rule (``deploy/nftables/coral2-pipeline-redis.nft``) caps each source address's
open connections to Redis at 4, over IPv4 and IPv6, in a network namespace of its own
with a real ``redis-server``: a fifth and sixth connection from one node are refused
before Redis counts them against ``maxclients``, while the management side's address
is not capped."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

RULES = Path(__file__).resolve().parents[2] / "deploy" / "nftables"
PORT = 6392

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace and nft need root"),
    pytest.mark.skipif(shutil.which("nft") is None, reason="needs nft (make test installs it)"),
]

SCRIPT = """
set -e
ip link set lo up
ip addr add 10.9.9.9/32 dev lo
nft -f {rule}
redis-server --port {port} --bind '127.0.0.1 ::1 10.9.9.9' --save '' --appendonly no \\
    --protected-mode no --daemonize yes --dir {work} --logfile {work}/redis.log
for _ in $(seq 100); do redis-cli -p {port} ping >/dev/null 2>&1 && break; sleep 0.1; done
echo "node4: $({python} -c "{probe}" 127.0.0.1 6)"
echo "node6: $({python} -c "{probe}" ::1 6)"
echo "management: $({python} -c "{probe}" 10.9.9.9 6)"
redis-cli -p {port} shutdown nosave >/dev/null 2>&1 || true
"""
#: Open N connections from the loopback address given (held open), print how many Redis
#: answered.
PROBE = (
    "import socket, sys\n"
    "host, n, held, ok = sys.argv[1], int(sys.argv[2]), [], 0\n"
    "for _ in range(n):\n"
    " try:\n"
    "  s = socket.create_connection((host, {port}), timeout=5, source_address=(host, 0))\n"
    "  s.sendall(b'PING\\\\r\\\\n'); ok += s.recv(64).startswith(b'+PONG'); held.append(s)\n"
    " except OSError: pass\n"
    "print(ok)"
)


@pytest.mark.parametrize("name", ["coral2-pipeline-compute.nft", "coral2-pipeline-redis.nft"])
def test_the_shipped_rules_load(name: str) -> None:
    done = subprocess.run(
        ["unshare", "--net", "nft", "-c", "-f", str(RULES / name)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_a_node_holds_at_most_four_connections_and_the_management_side_more(
    tmp_path: Path,
) -> None:
    text = (RULES / "coral2-pipeline-redis.nft").read_text()
    text = text.replace("{ 6379, 26379 }", f"{{ {PORT} }}")
    text = text.replace("{ 10.0.0.0/28 }", "{ 10.9.9.9 }").replace("{ fd00::/124 }", "{ fd00::1 }")
    rule = tmp_path / "rule.nft"
    rule.write_text(text)
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
    assert lines == {"node4": "4", "node6": "4", "management": "6"}, done.stdout

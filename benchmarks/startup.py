"""How fast the commands Flux runs per job start: from process start to their first
Redis command, against ``python -c "import redis"`` doing the same, in the same run.

``flux-prolog`` runs once per job (Flux's job-manager prolog), ``hook`` once per
request a perilog script sends, ``status`` once per monitoring check. Each is started
against a Redis of its own whose ``MONITOR`` stream shows, with the server's clock,
when the new client's first command arrives; the process is then stopped (a prolog
would wait for its verdict). The median of several starts is compared with the median
of a bare ``import redis`` and ``PING``: the ratio is the figure (target ≤ 3).

``python -m benchmarks.startup``
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import redis
from coral2_sim.redis_server import RedisServer

#: Starts of each command measured (the median is the figure).
STARTS = 7
#: The baseline: what any client of Redis pays to start.
BASELINE = [sys.executable, "-c", "import redis, sys; redis.Redis.from_url(sys.argv[1]).ping()"]


class FirstCommands:
    """Watches a Redis's ``MONITOR`` stream: when each new client sent its first command."""

    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(url)
        self.seen: dict[str, float] = {}
        self.lock = threading.Condition()
        self.monitor = self.client.monitor()
        self.monitor.__enter__()
        self.own = ""
        self.thread = threading.Thread(target=self._listen, daemon=True)
        self.thread.start()

    def _listen(self) -> None:
        try:
            for command in self.monitor.listen():
                address = (
                    str(command.get("client_address", ""))
                    + ":"
                    + str(command.get("client_port", ""))
                )
                with self.lock:
                    if address not in self.seen:
                        self.seen[address] = float(command["time"])
                        self.lock.notify_all()
        except (redis.ConnectionError, OSError, ValueError):
            return

    def first_after(self, start: float, timeout_s: float = 60.0) -> float:
        """The time of the first command of a client first seen after ``start``."""
        deadline = time.monotonic() + timeout_s
        with self.lock:
            while True:
                fresh = [t for t in self.seen.values() if t >= start]
                if fresh:
                    return min(fresh)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no Redis command from the started process")
                self.lock.wait(left)

    def close(self) -> None:
        try:
            self.monitor.__exit__(None, None, None)
        finally:
            self.client.close()


def _start_to_first_command(
    watch: FirstCommands, argv: list[str], env: dict[str, str], stdin: Path | None = None
) -> float:
    with watch.lock:
        watch.seen.clear()
    start = time.time()
    with stdin.open("rb") if stdin else open(os.devnull, "rb") as feed:
        proc = subprocess.Popen(
            argv, env=env, stdin=feed, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            first = watch.first_after(start)
        finally:
            proc.kill()
            proc.wait()
    return first - start


def bench_startup(starts: int = STARTS) -> dict[str, float]:
    """Median seconds from process start to first Redis command of the baseline and of
    each command, and each command's ratio to the baseline."""
    command = [sys.executable, "-m", "pipeline.cli"]
    with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp)) as server:
        payload = Path(tmp, "teardown.json")
        payload.write_text(json.dumps({"jobid": 1}))
        env = {
            **os.environ,
            "CORAL2_PIPELINE_PIPELINE__BROKER_URL": server.url,
            "FLUX_JOB_ID": "1",
        }
        env.pop("CORAL2_PIPELINE_CONFIG", None)
        runs: dict[str, tuple[list[str], Path | None]] = {
            "baseline": ([*BASELINE, server.url], None),
            "flux-prolog": ([*command, "flux-prolog", "--timeout", "60"], None),
            "hook": ([*command, "hook", "dws.teardown", "--payload", str(payload)], None),
            "status": ([*command, "status"], None),
        }
        watch = FirstCommands(server.url)
        try:
            times: dict[str, list[float]] = {name: [] for name in runs}
            for _ in range(starts):  # interleaved: a noisy second costs each alike
                for name, (argv, stdin) in runs.items():
                    times[name].append(_start_to_first_command(watch, argv, env, stdin))
        finally:
            watch.close()
    out = {name: statistics.median(values) for name, values in times.items()}
    for name in ("flux-prolog", "hook", "status"):
        out[f"{name} ratio"] = out[name] / out["baseline"]
    return out


def main() -> None:
    """Print the figures."""
    r = bench_startup()
    print(f"python -c 'import redis' → first command: {r['baseline'] * 1000:.0f} ms")
    for name in ("flux-prolog", "hook", "status"):
        print(f"{name}: {r[name] * 1000:.0f} ms, {r[f'{name} ratio']:.2f}x the baseline")


if __name__ == "__main__":
    main()

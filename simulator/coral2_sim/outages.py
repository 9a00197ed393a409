"""Outages of the simulated system's services, as the chaos harness strikes them: the API
server restarted over its objects, Redis restarted or crashed over its append-only file."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from coral2_sim.kube.sim_paths import RESTART_PATH
from pipeline.settings import load_settings

if TYPE_CHECKING:
    from coral2_sim.system import SimulatedSystem


def restart_kube(system: SimulatedSystem, down_s: float) -> None:
    """Restart the API server over its objects (``KubeApiServer.restart``): down for
    ``down_s``, every connection cut, its watch cache afresh. Returns once it serves."""
    kube = system.kube
    assert kube is not None
    before = kube.sim(RESTART_PATH, {"down_s": down_s}, timeout=30)["restarts"]
    if system.dws is not None:  # its pooled connections are cut: close them, not leak them
        system.dws.close()
    deadline = time.monotonic() + down_s + 60
    while time.monotonic() < deadline:
        time.sleep(0.2)
        try:
            if kube.sim(RESTART_PATH, timeout=5)["restarts"] > before:
                return
        except OSError:
            continue
    raise RuntimeError(f"the API server did not come back within {down_s + 60:.0f} s")


def restart_redis(
    system: SimulatedSystem,
    down_s: float = 0.5,
    *,
    crash: bool = False,
    host_crash: tuple[Path, int] | None = None,
) -> None:
    """Stop Redis and start it again on its port, with its append-only file (a real
    restart; ``crash``: SIGKILLed, losing nothing the kernel was handed; ``host_crash``:
    the file cut back to that mark as well, as the host's crash loses the writes not yet
    synced, :meth:`~coral2_sim.redis_server.RedisServer.crash_back_to`). The caller's
    Celery app gets a new result consumer: Celery's Redis result backend does not come
    back from a lost subscription connection."""
    redis = system.redis
    assert redis is not None
    if host_crash is not None:
        redis.crash_back_to(host_crash)
    elif crash:
        redis.kill()
    else:
        redis.stop()
    time.sleep(down_s)
    redis.start()
    if system.app is not None:
        from pipeline.platform.app import create_app

        env = {k: v for k, v in system.env().items() if k.startswith("CORAL2_")}
        system.app = create_app(load_settings(env=env), set_current=False)

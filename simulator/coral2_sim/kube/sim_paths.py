"""The simulated API server's own paths (``/sim/…``), which no Kubernetes client calls:
the harness's counters, faults and restarts."""

from __future__ import annotations

import json
import threading
from typing import Any

#: GET here answers how many requests each User-Agent made (not a Kubernetes path).
REQUESTS_PATH = "/sim/requests-by-agent"
#: PUT ``{"rate": 0}`` here ends the faults at random (a harness's faults are over)
FAULTS_PATH = "/sim/faults"
#: The DWS side's faults a PUT of FAULTS_PATH may set while it runs.
DWS_FAULTS = ("slow_rabbits", "never_mount", "never_unmount", "failed_copies")
#: PUT ``{"down_s": 3}`` here restarts the server (:meth:`KubeApiServer.restart`), at once;
#: GET answers ``{"restarts": N}``, how many restarts it has come back from
RESTART_PATH = "/sim/restart"
#: GET here answers what RBAC allowed each user so far, ``{"used": {user: [[api group,
#: resource, verb], ...]}}``, and the message of each request it refused (``"refused"``)
RBAC_PATH = "/sim/rbac"


def _dws(server: Any, body: dict[str, Any]) -> dict[str, list[str]]:
    """Set the DWS side's faults that ``body`` names (each a list, replacing the set whole,
    so that no controller thread sees it change while it reads it); return them as they
    are now."""
    faults = server.dws_faults
    if faults is None:
        return {}
    for name in DWS_FAULTS:
        if name in body:
            setattr(faults, name, {str(v) for v in body[name]})
    return {name: sorted(getattr(faults, name)) for name in DWS_FAULTS}


def answer_sim_path(handler: Any, method: str, raw: bytes) -> bool:
    """Answer ``handler``'s request if it is for one of the simulator's own paths; return
    whether it was."""
    server, path = handler.server, handler.path
    if method == "GET" and path == REQUESTS_PATH:  # the simulator's own counter
        with server._agents_lock:
            handler._send(200, dict(server.agents))
        return True
    if method == "PUT" and path == FAULTS_PATH:
        body = json.loads(raw or b"{}")
        chaos = server.chaos
        if chaos is not None and "rate" in body:
            chaos.rate = float(body["rate"])
        handler._send(200, {"drawn": {} if chaos is None else chaos.drawn, **_dws(server, body)})
        return True
    if method == "GET" and path == RBAC_PATH:
        authorizer = server.authorizer
        used = {} if authorizer is None else authorizer.used_by_user()
        handler._send(
            200,
            {
                "used": {user: sorted(map(list, rules)) for user, rules in used.items()},
                "refused": [] if authorizer is None else authorizer.refused(),
            },
        )
        return True
    if method == "GET" and path == RESTART_PATH:
        handler._send(200, {"restarts": server.restarts})
        return True
    if method == "PUT" and path == RESTART_PATH and server.restart is not None:
        down_s = float(json.loads(raw or b"{}").get("down_s", 1.0))
        handler._send(202, {"down_s": down_s, "restarts": server.restarts})
        handler.close_connection = True
        threading.Thread(target=server.restart, args=(down_s,), name="kube-restart").start()
        return True
    return False


__all__ = [
    "DWS_FAULTS",
    "FAULTS_PATH",
    "RBAC_PATH",
    "REQUESTS_PATH",
    "RESTART_PATH",
    "answer_sim_path",
]

"""A simulated Slingshot fabric manager: the hardware-collectives endpoints, over HTTP on
loopback, with faults to inject.

What it serves (the shapes Slurm and libfabric send and parse):

* ``POST /token`` — OAuth client credentials → ``{"access_token"}``;
* the WLM endpoints under ``/fabric/collectives/jobs`` — look up, create
  (``{"jobID", "mcastLimit"}`` → a job with a ``sessionToken``), release a
  step's trees (``PATCH {"jobSteps": {step: null}}``), release (``DELETE``),
  list (``GET …/jobs/`` → ``documentLinks``); each needs the WLM's bearer
  token (or basic auth as ``cxi``);
* the application endpoints under ``/fabric/collectives/multicasts`` — a
  tree for ``{"macs", "vni", "timeout", "jobID", "jobStepID"}`` with the
  job's session token as bearer: an ``mcastID`` below 8192 and a six-group
  ``hwRoot``, ``507 "Error 01: multicast limit for job reached"`` past the
  job's ``mcastLimit``; ``DELETE …/multicasts/<id>``.

Faults (:meth:`FabricManagerSim.fault`): ``down`` (every connection is
dropped unanswered), ``slow`` (each answer waits), ``5xx`` (the next
requests get 503), ``401`` (the next requests are refused as if the token
expired), and :meth:`FabricManagerSim.vanish` (a reservation disappears).
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from pipeline.model.hwcoll import JOBS_PATH, MULTICASTS_PATH

#: Multicast ids handed out (libfabric refuses 8192 and above).
MAX_MCAST_ID = 8192


@dataclass
class _Job:
    job_id: str
    mcast_limit: int
    token: str
    steps: dict[str, list[int]] = field(default_factory=dict)

    def view(self) -> dict[str, Any]:
        return {
            "jobID": self.job_id,
            "mcastLimit": self.mcast_limit,
            "sessionToken": self.token,
            "jobSteps": {k: list(v) for k, v in self.steps.items()},
            "documentSelfLink": f"{JOBS_PATH}/{self.job_id}",
        }


@dataclass
class _Faults:
    down: bool = False
    slow_s: float = 0.0
    errors: int = 0  # the next this many requests get 503
    unauthorized: int = 0  # the next this many requests get 401


class FabricManagerSim:
    """The simulated fabric manager; :meth:`start` serves it in a thread."""

    def __init__(
        self,
        *,
        client_id: str = "flux",
        client_secret: str | None = None,
        password: str | None = None,
        latency_s: float = 0.0,
    ) -> None:
        self.client_id = client_id
        self.client_secret = client_secret or secrets.token_urlsafe(16)
        self.password = password or secrets.token_urlsafe(16)
        self.latency_s = latency_s
        self.lock = threading.Lock()
        self.jobs: dict[str, _Job] = {}
        self.trees: dict[int, tuple[str, str]] = {}  # mcastID → (jobID, step)
        self.tokens: set[str] = set()
        self.faults = _Faults()
        self.requests: dict[str, int] = {}
        self.trees_made = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.sim = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}"

    def start(self) -> FabricManagerSim:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="fabric-manager", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FabricManagerSim:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- faults and views ---------------------------------------------------------------
    def fault(
        self,
        *,
        down: bool | None = None,
        slow_s: float | None = None,
        errors: int | None = None,
        unauthorized: int | None = None,
    ) -> None:
        """Set faults: ``down``, ``slow_s`` per answer, the next ``errors`` requests 503,
        the next ``unauthorized`` requests 401."""
        with self.lock:
            if down is not None:
                self.faults.down = down
            if slow_s is not None:
                self.faults.slow_s = slow_s
            if errors is not None:
                self.faults.errors = errors
            if unauthorized is not None:
                self.faults.unauthorized = unauthorized

    def vanish(self, job_id: str) -> bool:
        """Drop reservation ``job_id`` and its trees, as a fabric manager that lost it."""
        with self.lock:
            gone = self.jobs.pop(job_id, None)
            for mcast in [m for m, (j, _) in self.trees.items() if j == job_id]:
                del self.trees[mcast]
            return gone is not None

    def reservations(self) -> dict[str, int]:
        """jobID → mcastLimit of every reservation held."""
        with self.lock:
            return {j.job_id: j.mcast_limit for j in self.jobs.values()}

    def tree_count(self) -> int:
        """How many multicast trees exist."""
        with self.lock:
            return len(self.trees)

    def write_credentials(self, directory: Path) -> Path:
        """Write the OAuth and basic credentials a client reads (``hwcoll.auth_dir``), each
        file mode 0600 as the client insists; return ``directory``."""
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        for name, value in (
            ("endpoint", f"{self.url}/token"),
            ("client-id", self.client_id),
            ("client-secret", self.client_secret),
            ("passwd", self.password),
        ):
            path = directory / name
            path.write_text(value + "\n")
            path.chmod(0o600)
        return directory

    def pipeline_env(self, auth_dir: Path, min_nodes: int | None) -> dict[str, str]:
        """The settings (environment) that send the pipeline's workers here, logging in
        with the credentials written to ``auth_dir``; jobs of ``min_nodes`` nodes or more
        are eligible."""
        env = {
            "CORAL2_PIPELINE_HWCOLL__URL": self.url,
            "CORAL2_PIPELINE_HWCOLL__AUTH_DIR": str(self.write_credentials(auth_dir)),
            "CORAL2_PIPELINE_HWCOLL__REQUEST_TIMEOUT": "1",
        }
        if min_nodes is not None:
            env["CORAL2_PIPELINE_HWCOLL__MIN_JOB_NODES"] = str(min_nodes)
        return env

    def wlm_token(self) -> str:
        """A bearer token as the token endpoint hands out (for tests that skip OAuth)."""
        token = secrets.token_urlsafe(24)
        with self.lock:
            self.tokens.add(token)
        return token

    def expire_tokens(self) -> None:
        """Every WLM bearer token stops working (the next request gets 401)."""
        with self.lock:
            self.tokens.clear()

    # --- the API ------------------------------------------------------------------------
    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any]:
        """(HTTP code, JSON body or None) for one request."""
        with self.lock:
            self.requests[method] = self.requests.get(method, 0) + 1
        if path == "/token" and method == "POST":
            return self._token(body)
        if path.startswith(MULTICASTS_PATH):
            return self._multicasts(method, path, headers, body)
        if path.startswith(JOBS_PATH):
            if not self._wlm(headers):
                return 401, {"detail": "authentication required"}
            return self._jobs(method, path, body)
        return 404, {"detail": f"no route {path}"}

    def _token(self, body: bytes) -> tuple[int, Any]:
        form = {k: v[-1] for k, v in parse_qs(body.decode(errors="replace")).items()}
        if (form.get("client_id"), form.get("client_secret")) != (
            self.client_id,
            self.client_secret,
        ) or form.get("grant_type") != "client_credentials":
            return 401, {"detail": "bad client credentials"}
        return 200, {"access_token": self.wlm_token(), "token_type": "Bearer"}

    def _wlm(self, headers: dict[str, str]) -> bool:
        auth = headers.get("authorization", "")
        with self.lock:
            if auth.startswith("Bearer "):
                return auth[7:] in self.tokens
        if auth.startswith("Basic "):
            import base64

            try:
                user, _, password = base64.b64decode(auth[6:]).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                return False
            return (user, password) == ("cxi", self.password)
        return False

    def _jobs(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        rest = path[len(JOBS_PATH) :].strip("/")
        with self.lock:
            if not rest:
                if method == "GET":
                    return 200, {"documentLinks": [f"{JOBS_PATH}/{j}" for j in self.jobs]}
                if method == "POST":
                    try:
                        data = json.loads(body)
                        job_id, limit = str(data["jobID"]), int(data["mcastLimit"])
                    except (ValueError, KeyError, TypeError):
                        return 400, {"detail": "need jobID and mcastLimit"}
                    job = self.jobs.get(job_id)
                    if job is None:
                        job = self.jobs[job_id] = _Job(job_id, limit, secrets.token_urlsafe(24))
                    return 201, job.view()
                return 405, {"detail": f"{method} not allowed"}
            job = self.jobs.get(rest)
            if job is None:
                return 404, {"detail": f"no job {rest}"}
            if method == "GET":
                return 200, job.view()
            if method == "PATCH":
                try:
                    steps = json.loads(body).get("jobSteps") or {}
                except (ValueError, AttributeError):
                    return 400, {"detail": "need jobSteps"}
                for step, value in steps.items():
                    if value is None:
                        for mcast in job.steps.pop(step, []):
                            self.trees.pop(mcast, None)
                return 200, job.view()
            if method == "DELETE":
                del self.jobs[rest]
                for mcast in [m for m, (j, _) in self.trees.items() if j == rest]:
                    del self.trees[mcast]
                return 200, None
        return 405, {"detail": f"{method} not allowed"}

    def _multicasts(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any]:
        auth = headers.get("authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else ""
        with self.lock:
            if method == "POST":
                try:
                    data = json.loads(body)
                    job_id, step, macs = str(data["jobID"]), str(data["jobStepID"]), data["macs"]
                except (ValueError, KeyError, TypeError):
                    return 400, {"detail": "need macs, jobID and jobStepID"}
                job = self.jobs.get(job_id)
                if job is None or job.token != token:
                    return 401, {"detail": "the session token does not match the job"}
                held = sum(len(v) for v in job.steps.values())
                if held >= job.mcast_limit:
                    return 507, {"message": "Error 01: multicast limit for job reached"}
                free = next((i for i in range(MAX_MCAST_ID) if i not in self.trees), None)
                if free is None:
                    return 507, {"message": "Error 02: no multicast addresses left"}
                self.trees[free] = (job_id, step)
                self.trees_made += 1
                job.steps.setdefault(step, []).append(free)
                root = str(macs[0]).split(":") if macs else ["0"]
                hw_root = ":".join(["00", "00", "00", *[p.zfill(2).lower() for p in root][-3:]])
                return 201, {
                    "mcastID": free,
                    "hwRoot": hw_root,
                    "documentSelfLink": f"{MULTICASTS_PATH}/{free}",
                }
            if method == "DELETE":
                try:
                    mcast = int(path.rsplit("/", 1)[-1])
                except ValueError:
                    return 404, {"detail": "no such multicast"}
                owner = self.trees.get(mcast)
                if owner is None:
                    return 404, {"detail": "no such multicast"}
                job = self.jobs.get(owner[0])
                if job is None or job.token != token:
                    return 401, {"detail": "the session token does not match the job"}
                del self.trees[mcast]
                job.steps[owner[1]].remove(mcast)
                return 200, {}
        return 405, {"detail": f"{method} not allowed"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        sim: FabricManagerSim = self.server.sim
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with sim.lock:
            faults = sim.faults
            down, slow = faults.down, faults.slow_s
            fail = faults.errors > 0
            faults.errors -= fail
            refuse = faults.unauthorized > 0 and not self.path.startswith("/token")
            faults.unauthorized -= refuse
        if down:
            self.close_connection = True  # nothing answers
            return
        if sim.latency_s or slow:
            time.sleep(sim.latency_s + slow)
        if fail:
            code, data = 503, {"detail": "injected fault"}
        elif refuse:
            code, data = 401, {"detail": "token expired"}
        else:
            headers = {k.lower(): v for k, v in self.headers.items()}
            code, data = sim.answer(self.command, self.path.split("?")[0], headers, body)
        raw = b"" if data is None else json.dumps(data).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timed out)
            self.close_connection = True

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _serve

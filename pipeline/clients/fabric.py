"""The Slingshot fabric manager's hardware-collectives API, as a workload manager uses it.

Reservations (``/fabric/collectives/jobs``): look one up, create it on a
404, release a job step's multicast trees (``PATCH {"jobSteps": {step:
null}}``), release the reservation (``DELETE``), list them all. The answers
and codes are the ones Slurm's ``switch/hpe_slingshot`` sends and parses.

Authentication, read from files under ``hwcoll.auth_dir`` that only this
service may read:

* ``oauth`` — client credentials (``endpoint``, ``client-id``,
  ``client-secret``) traded for a bearer token, kept in memory and fetched
  again once when the fabric manager answers 401 or 403;
* ``basic`` — user ``cxi`` and the password in ``passwd``;
* optional mTLS (``mtls_cert``/``mtls_key``) and a CA bundle (``ca``).

httpx errors and HTTP statuses become :class:`FabricManagerUnavailable`
(unreachable, slower than ``request_timeout``, 5xx: try again later) or
:class:`FabricManagerError` (refused) here, at the boundary. No message
carries a session token.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from pipeline.errors import ConfigError, FabricManagerError, FabricManagerUnavailable
from pipeline.model.files import read_text
from pipeline.model.hwcoll import JOBS_PATH, links
from pipeline.settings.hwcoll import HwcollSettings
from pipeline.settings.secrets import check_private

USER_AGENT = "coral2-pipeline/hwcoll"


def _read(directory: str, name: str, secret: bool) -> str:
    path = Path(directory) / name
    if secret:
        check_private(path, f"hwcoll credential {name}")
    return read_text(path, f"hwcoll credential {name}", 1024 * 1024).strip()


class FabricManager:
    """A client of one fabric manager (thread-safe; one per process)."""

    def __init__(
        self, settings: HwcollSettings, *, transport: httpx.BaseTransport | None = None
    ) -> None:
        if not settings.url:
            raise ConfigError("hwcoll.url is not set: hardware collectives are off")
        self.settings = settings
        self.base = settings.url.rstrip("/")
        cert = None
        if settings.mtls_cert or settings.mtls_key:
            if not (settings.mtls_cert and settings.mtls_key):
                raise ConfigError("hwcoll mTLS needs both mtls_cert and mtls_key")
            check_private(settings.mtls_key, "hwcoll.mtls_key")
            cert = (settings.mtls_cert, settings.mtls_key)
        auth: httpx.Auth | None = None
        if settings.auth == "basic":
            auth = httpx.BasicAuth("cxi", _read(settings.auth_dir, "passwd", secret=True))
        self._token: str | None = None
        self._token_lock = threading.Lock()
        self.client = httpx.Client(
            timeout=settings.request_timeout,
            verify=settings.ca or True,
            cert=cert,
            auth=auth,
            transport=transport,
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
        )

    def close(self) -> None:
        self.client.close()

    # --- authentication ---------------------------------------------------------------
    def _bearer(self, refresh: bool = False) -> dict[str, str]:
        if self.settings.auth != "oauth":
            return {}
        with self._token_lock:
            if self._token is None or refresh:
                self._token = self._fetch_token()
            return {"Authorization": f"Bearer {self._token}"}

    def _fetch_token(self) -> str:
        directory = self.settings.auth_dir
        endpoint = _read(directory, "endpoint", secret=False)
        form = {
            "grant_type": "client_credentials",
            "client_id": _read(directory, "client-id", secret=False),
            "client_secret": _read(directory, "client-secret", secret=True),
            "scope": "openid",
        }
        try:
            answer = self.client.post(endpoint, data=form, auth=httpx.USE_CLIENT_DEFAULT)
        except httpx.HTTPError as exc:
            raise FabricManagerUnavailable(f"token endpoint {endpoint}: {_why(exc)}") from None
        if answer.status_code != 200:
            raise FabricManagerUnavailable(
                f"token endpoint {endpoint} answered {answer.status_code}"
            )
        try:
            token = answer.json()["access_token"]
        except (ValueError, KeyError, TypeError):
            raise FabricManagerError(f"token endpoint {endpoint}: no access_token") from None
        if not isinstance(token, str) or not token:
            raise FabricManagerError(f"token endpoint {endpoint}: no access_token")
        return token

    # --- requests -----------------------------------------------------------------------
    def _request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        deadline: float | None = None,
    ) -> dict[str, Any] | None:
        """One request; the answer's JSON, or None for a 404 (or an empty DELETE answer).
        ``deadline`` (monotonic s): the request gets only the time left until it."""
        url = self.base + path
        answer = self._send(method, url, body, self._bearer(), deadline)
        if answer.status_code in (401, 403) and self.settings.auth == "oauth":
            answer = self._send(method, url, body, self._bearer(refresh=True), deadline)
        code = answer.status_code
        if code == 404:
            return None
        if code >= 500:
            raise FabricManagerUnavailable(f"{method} {path}: the fabric manager answered {code}")
        if code >= 400:
            raise FabricManagerError(f"{method} {path}: refused ({code}{_detail(answer)})")
        if not answer.content:
            if method == "DELETE":
                return None
            raise FabricManagerError(f"{method} {path}: the fabric manager sent an empty answer")
        try:
            data = answer.json()
        except ValueError:
            raise FabricManagerError(f"{method} {path}: the answer is not JSON") from None
        if not isinstance(data, dict):
            raise FabricManagerError(f"{method} {path}: the answer is not a JSON object")
        return data

    def _send(
        self,
        method: str,
        url: str,
        body: dict[str, Any] | None,
        headers: dict[str, str],
        deadline: float | None = None,
    ) -> httpx.Response:
        timeout: Any = httpx.USE_CLIENT_DEFAULT
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise FabricManagerUnavailable(
                    f"{method} {url}: no time left of {self.settings.request_timeout:g} s"
                )
            timeout = left
        try:
            return self.client.request(method, url, json=body, headers=headers, timeout=timeout)
        except httpx.TimeoutException:
            raise FabricManagerUnavailable(
                f"{method} {url}: no answer in {self.settings.request_timeout:g} s"
            ) from None
        except httpx.HTTPError as exc:
            raise FabricManagerUnavailable(f"{method} {url}: {_why(exc)}") from None

    # --- the WLM endpoints --------------------------------------------------------------
    def reserve(self, fm_job_id: str, mcast_limit: int) -> str:
        """The session token of reservation ``fm_job_id``, made with ``mcast_limit``
        addresses when it does not exist yet (a rerun finds it and makes nothing). Both
        requests together take at most ``request_timeout``."""
        deadline = time.monotonic() + self.settings.request_timeout
        path = f"{JOBS_PATH}/{fm_job_id}"
        found = self._request("GET", path, deadline=deadline)
        if found is None:
            body = {"jobID": fm_job_id, "mcastLimit": mcast_limit}
            found = self._request("POST", JOBS_PATH, body, deadline=deadline)
        token = (found or {}).get("sessionToken")
        if not isinstance(token, str) or not token:
            raise FabricManagerError(f"reservation {fm_job_id}: the answer has no sessionToken")
        return token

    def exists(self, fm_job_id: str) -> bool:
        """Whether reservation ``fm_job_id`` is at the fabric manager."""
        return self._request("GET", f"{JOBS_PATH}/{fm_job_id}") is not None

    def release_step(self, fm_job_id: str, step: str) -> None:
        """Delete the multicast trees of job step ``step`` (a gone reservation is done)."""
        self._request("PATCH", f"{JOBS_PATH}/{fm_job_id}", {"jobSteps": {step: None}})

    def release(self, fm_job_id: str) -> None:
        """Release reservation ``fm_job_id`` (a gone one is done)."""
        self._request("DELETE", f"{JOBS_PATH}/{fm_job_id}")

    def reservations(self) -> list[str]:
        """Every reservation's id (``GET /fabric/collectives/jobs/``)."""
        return links(self._request("GET", JOBS_PATH + "/") or {})


def _why(exc: httpx.HTTPError) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _detail(answer: httpx.Response) -> str:
    try:
        data = answer.json()
    except (ValueError, json.JSONDecodeError):
        return ""
    detail = data.get("detail") or data.get("message") if isinstance(data, dict) else None
    return f": {str(detail)[:200]}" if detail else ""

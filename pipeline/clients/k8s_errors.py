"""Translate kubernetes-client and urllib3 errors into ``pipeline.errors`` (one mapping)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as Urllib3Error

from pipeline.errors import (
    AlreadyExists,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    KubeError,
    NotFound,
    Unavailable,
)

Factory = Callable[[str, int, str], KubeError]


def _conflict(message: str, status: int, reason: str) -> KubeError:
    if reason == "AlreadyExists":
        return AlreadyExists(message, status=status, reason=reason)
    return Conflict(message, status=status, reason=reason)


#: Every status the API server answers with, and what it means to us.
STATUS_ERRORS: Mapping[int, Factory] = {
    400: lambda m, s, r: Invalid(m, status=s, reason=r),
    401: lambda m, s, r: Forbidden(m, status=s, reason=r),
    403: lambda m, s, r: Forbidden(m, status=s, reason=r),
    404: lambda m, s, r: NotFound(m, status=s, reason=r),
    405: lambda m, s, r: Invalid(m, status=s, reason=r),
    409: _conflict,
    410: lambda m, s, r: Gone(m, status=s, reason=r),
    415: lambda m, s, r: Invalid(m, status=s, reason=r),
    422: lambda m, s, r: Invalid(m, status=s, reason=r),
    429: lambda m, s, r: Unavailable(m, status=s, reason=r),
    500: lambda m, s, r: Unavailable(m, status=s, reason=r),
    502: lambda m, s, r: Unavailable(m, status=s, reason=r),
    503: lambda m, s, r: Unavailable(m, status=s, reason=r),
    504: lambda m, s, r: Unavailable(m, status=s, reason=r),
}


def _status_body(exc: ApiException) -> tuple[str, str]:
    try:
        body = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        return str(exc.body or exc.reason or ""), ""
    if not isinstance(body, dict):
        return str(body), ""
    return str(body.get("message") or exc.reason or ""), str(body.get("reason") or "")


def translate(exc: Exception) -> KubeError:
    """Return the pipeline error for a kubernetes or urllib3 exception."""
    if isinstance(exc, ApiException):
        status = int(exc.status or 0)
        message, reason = _status_body(exc)
        if status == 0:
            return Unavailable(f"Kubernetes API unreachable: {exc.reason}", status=0)
        factory = STATUS_ERRORS.get(status)
        if factory is None:
            family = Unavailable if status >= 500 else Invalid
            return family(
                f"unexpected HTTP {status} from the Kubernetes API: {message}",
                status=status,
                reason=reason,
            )
        return factory(message or f"HTTP {status}", status, reason)
    if isinstance(exc, Urllib3Error | OSError):
        return Unavailable(f"Kubernetes API unreachable: {exc}", status=0)
    raise TypeError(f"not a Kubernetes client error: {exc!r}")

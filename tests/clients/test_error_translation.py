"""Every Kubernetes API answer maps to a named pipeline error; none slips through unmapped."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import MaxRetryError, ProtocolError

from pipeline.clients.k8s_errors import STATUS_ERRORS, translate
from pipeline.errors import (
    AlreadyExists,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    PermanentError,
    TemporaryError,
    Unavailable,
)

#: The statuses a Kubernetes API server answers with (API conventions), and their meaning.
EXPECTED = {
    400: Invalid,
    401: Forbidden,
    403: Forbidden,
    404: NotFound,
    405: Invalid,
    409: Conflict,
    410: Gone,
    415: Invalid,
    422: Invalid,
    429: Unavailable,
    500: Unavailable,
    502: Unavailable,
    503: Unavailable,
    504: Unavailable,
}


def api_error(status: int, reason: str = "", message: str = "boom") -> ApiException:
    exc = ApiException(status=status, reason="x")
    exc.body = json.dumps({"kind": "Status", "message": message, "reason": reason, "code": status})
    return exc


def test_the_mapping_covers_every_status_the_api_server_uses() -> None:
    assert set(STATUS_ERRORS) == set(EXPECTED)


@pytest.mark.parametrize(("status", "error"), sorted(EXPECTED.items()))
def test_each_status_becomes_its_named_error(status: int, error: type) -> None:
    translated = translate(api_error(status))
    assert type(translated) is error
    assert translated.status == status
    assert str(translated) == "boom"


def test_409_already_exists_differs_from_a_conflict() -> None:
    assert isinstance(translate(api_error(409, "AlreadyExists")), AlreadyExists)
    assert isinstance(translate(api_error(409, "Conflict")), Conflict)


def test_a_webhook_denial_keeps_its_message_for_the_user() -> None:
    message = (
        "admission webhook \"vworkflow.kb.io\" denied the request: invalid directive '#DW foo'"
    )
    error = translate(api_error(403, "Forbidden", message))
    assert isinstance(error, Forbidden)
    assert isinstance(error, PermanentError)
    assert str(error) == message


@pytest.mark.parametrize(
    "exc", [MaxRetryError(None, "/x", "refused"), ProtocolError("reset"), ConnectionRefusedError()]
)
def test_connection_failures_are_temporary_unavailability(exc: Exception) -> None:
    error = translate(exc)
    assert isinstance(error, Unavailable)
    assert isinstance(error, TemporaryError)


def test_unlisted_statuses_still_get_a_named_family() -> None:
    assert isinstance(translate(api_error(418)), Invalid)
    assert isinstance(translate(api_error(507)), Unavailable)

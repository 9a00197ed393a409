"""nnf gives some errors no user message (``DW Directive 0: Internal error: ``); the job's
exception then quotes the failing entry's own error after it, so that it says what went
wrong. A message with words of its own is quoted as flux-coral2 quotes it."""

from __future__ import annotations

from pipeline.states.actions import SendOnce
from pipeline.states.observed import decide
from tests.states.factory import job, settings, snapshot

TLS = (
    "internal error: the administrator must configure the user container TLS secret for the "
    'system. See the copy-offload docs: secrets "nnf-dm-usercontainer-server-tls" not found'
)


def note_of(message: str, drivers: list[dict[str, object]]) -> str:
    shot = snapshot("Proposal", ready=False, status="Error", message=message)
    shot.workflow["status"]["drivers"] = drivers
    (sent,) = [a for a in decide(shot, job(), 0.0, settings()) if isinstance(a, SendOnce)]
    return str(sent.payload["note"])


def test_an_empty_user_message_is_followed_by_the_entrys_error() -> None:
    drivers = [
        {"status": "Error", "error": TLS, "watchState": "Proposal"},
        {"status": "Completed", "error": "", "watchState": "Proposal"},
    ]
    assert note_of("DW Directive 0: Internal error: ", drivers) == (
        f"DWS/Rabbit interactions failed: workflow hit an error: DW Directive 0: Internal "
        f"error: ({TLS})"
    )


def test_a_message_with_words_is_quoted_alone() -> None:
    drivers = [{"status": "Error", "error": "user error: debug text", "watchState": "Proposal"}]
    message = "DW Directive 0: User error: job storage instance 'x' not found"
    assert note_of(message, drivers) == (
        f"DWS/Rabbit interactions failed: workflow hit an error: {message}"
    )

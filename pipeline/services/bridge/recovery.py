"""Whether Flux already took an outbox message, from the job's eventlog.

The bridge acknowledges an outbox entry after Flux answered it. Killed in
between, it leaves the entry pending, and a bridge that starts again reclaims
it without knowing whether Flux took it. For a message that leaves its mark in
the job's eventlog, :func:`already_taken` answers that from the eventlog, so
the message is not delivered a second time (a second exception, a second memo
event); a KVS put whose key the job's KVS already holds with its value is not
put again either. The other kinds change a state to the same value again when
sent twice (a drain, a property), and are delivered again.

===============  =========================================================
kind             its mark in the job's eventlog (what dws-jobtap and the
                 job manager post)
===============  =========================================================
exception        ``exception`` with the same type, severity and note
prolog-remove    ``prolog-finish`` of ``dws-setup``
epilog-remove    ``epilog-finish`` of ``dws-epilog``
resource-update  ``dependency-remove`` of ``dws-create``
memo             ``memo`` with the same context
event-post       the event itself, with the same context
kvs-put          (the job's KVS key itself holding the same value)
===============  =========================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pipeline.model.eventlog import EventlogEntry
from pipeline.store.outbox import OutboxMessage

Mark = Callable[[EventlogEntry, dict[str, Any]], bool]


def _described(name: str, description: str) -> Mark:
    def mark(event: EventlogEntry, _payload: dict[str, Any]) -> bool:
        return event.name == name and (event.context or {}).get("description") == description

    return mark


def _exception(event: EventlogEntry, payload: dict[str, Any]) -> bool:
    context = event.context or {}
    return event.name == "exception" and all(
        context.get(key) == payload.get(key) for key in ("type", "severity", "note")
    )


def _memo(event: EventlogEntry, payload: dict[str, Any]) -> bool:
    return event.name == "memo" and event.context == payload.get("memo")


def _posted(event: EventlogEntry, payload: dict[str, Any]) -> bool:
    return event.name == payload.get("name") and (event.context or None) == (
        payload.get("context") or None
    )


MARKS: dict[str, Mark] = {
    "exception": _exception,
    "prolog-remove": _described("prolog-finish", "dws-setup"),
    "epilog-remove": _described("epilog-finish", "dws-epilog"),
    "resource-update": _described("dependency-remove", "dws-create"),
    "memo": _memo,
    "event-post": _posted,
}


def leaves_a_mark(message: OutboxMessage) -> bool:
    """Whether ``message``'s delivery shows in its job's eventlog."""
    return message.kind in MARKS and message.jobid is not None


def already_taken(message: OutboxMessage, eventlog: Sequence[EventlogEntry]) -> bool:
    """Whether ``eventlog`` (the job's) shows that Flux took ``message`` already."""
    mark = MARKS.get(message.kind)
    if mark is None:
        return False
    return any(mark(event, message.payload) for event in eventlog)

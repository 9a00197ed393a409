"""RFC 18 eventlogs: one JSON object per line, ``{timestamp, name, context?}``."""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pipeline.errors import EventlogError
from pipeline.model.pydantic_errors import problems


class EventlogEntry(BaseModel):
    """One RFC 18 event."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timestamp: float
    name: str = Field(min_length=1)
    context: dict[str, Any] | None = None

    @field_validator("timestamp")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"timestamp must be a finite non-negative number, got {value}")
        return value

    def to_dict(self) -> dict[str, Any]:
        """Return the entry as the RFC 18 object (``context`` only when there is one)."""
        obj: dict[str, Any] = {"timestamp": self.timestamp, "name": self.name}
        if self.context is not None:
            obj["context"] = dict(self.context)
        return obj

    def to_line(self) -> str:
        """Return the entry as one eventlog line (with the trailing newline)."""
        return json.dumps(self.to_dict(), separators=(",", ":")) + "\n"


def parse_eventlog(text: str) -> list[EventlogEntry]:
    """Parse an eventlog; an invalid line raises with its line number."""
    entries = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        entries.append(parse_event(line, number))
    return entries


def parse_event(line: str, number: int = 1) -> EventlogEntry:
    """Parse one eventlog line."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise EventlogError(f"eventlog line {number}: not JSON ({exc.msg}): {line!r}") from exc
    if not isinstance(obj, dict):
        raise EventlogError(f"eventlog line {number}: expected an object, got {line!r}")
    try:
        return EventlogEntry.model_validate(obj)
    except ValidationError as exc:
        raise EventlogError(f"eventlog line {number}: " + "; ".join(problems(exc))) from exc


def format_eventlog(entries: list[EventlogEntry]) -> str:
    """Return entries as eventlog text."""
    return "".join(e.to_line() for e in entries)

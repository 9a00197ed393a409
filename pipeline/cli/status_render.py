"""What ``coral2-pipeline status``'s two reports (the whole pipeline, one job) print
alike: the flags under a table, ages, ``--json``'s plain data."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from pydantic import BaseModel
from rich.console import Console

from pipeline.cli.status_flags import CRITICAL, NAMES, Flag, verdict
from pipeline.cli.tables import SafeTable, flag_line
from pipeline.model.job import JobRecord


def rows(
    console: Console, title: str, columns: tuple[str, ...], rows: list[tuple[str, ...]]
) -> None:
    if not rows:
        return
    table = SafeTable(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    console.print(table)


def verdict_json(flags: list[Flag]) -> dict[str, Any]:
    """The verdict and the flags, for ``--json``."""
    return {
        "status": NAMES[verdict(flags)],
        "flags": [f.text for f in flags],
        "critical": [f.text for f in flags if f.severity == CRITICAL],
    }


def print_flags(console: Console, flags: list[Flag]) -> None:
    for flag in flags:
        console.print(flag_line(f"{NAMES[flag.severity]}: {flag.text}"), highlight=False)
    if not flags:
        console.print("nothing to look at", highlight=False)


def ago(now: float, at: float) -> str:
    return f"{max(now - at, 0.0):.1f} s ago"


def until(now: float, at: float) -> str:
    delta = at - now
    return f"in {delta:.1f} s" if delta >= 0 else f"{-delta:.1f} s overdue"


def plain_json(value: Any) -> Any:
    """``value`` as plain JSON data (the report's dataclasses and models turned to dicts)."""
    return json.loads(json.dumps(value, default=plain))


def plain(value: Any) -> Any:
    """JSON form of the report's dataclasses and models (``json.dumps`` default)."""
    if isinstance(value, BaseModel):
        data = value.model_dump(mode="json")
        if isinstance(value, JobRecord) and value.hwcoll is not None:
            data["hwcoll"] = value.hwcoll.redacted()  # the session token is a secret
        return data
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")

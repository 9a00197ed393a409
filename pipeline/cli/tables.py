"""The tables and ``look:`` lines the admin commands print (rich), apart from
``pipeline.cli.common`` so that a command that prints none (``flux-prolog``, ``hook``)
does not load rich."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from pipeline.cli.common import printable


class SafeTable(Table):
    """A rich table whose cells are shown as they are: control characters escaped
    (:func:`printable`) and no rich markup read from them."""

    def add_row(self, *renderables: Any, **kwargs: Any) -> None:
        cells = [Text(printable(cell)) if isinstance(cell, str) else cell for cell in renderables]
        super().add_row(*cells, **kwargs)


def flag_line(flag: str) -> Text:
    """A ``look:`` line of ``status`` (its text from the store, shown as it is)."""
    return Text.assemble(("look:", "yellow"), " ", printable(flag))

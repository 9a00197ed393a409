"""The tables and ``look:`` lines the admin commands print (rich), apart from
``pipeline.cli.common`` so that a command that prints none (``flux-prolog``, ``hook``)
does not load rich."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pipeline.cli.common import printable

#: The width a report is laid out in when it goes to a pipe or a file: wide enough that no
#: table is cut or wrapped (rich's default there is 80 columns).
WHOLE = 100_000


def report_console(*, stderr: bool = False) -> Console:
    """The console a command prints its report on: the terminal's width on a terminal;
    piped or redirected, every row whole on its line (``COLUMNS`` still chooses)."""
    out = Console(stderr=stderr)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out = Console(stderr=stderr, width=WHOLE)
    return out


class SafeTable(Table):
    """A rich table whose cells are shown as they are: control characters escaped
    (:func:`printable`) and no rich markup read from them."""

    def add_row(self, *renderables: Any, **kwargs: Any) -> None:
        cells = [Text(printable(cell)) if isinstance(cell, str) else cell for cell in renderables]
        super().add_row(*cells, **kwargs)


def flag_line(flag: str) -> Text:
    """A ``look:`` line of ``status`` (its text from the store, shown as it is)."""
    return Text.assemble(("look:", "yellow"), " ", printable(flag))

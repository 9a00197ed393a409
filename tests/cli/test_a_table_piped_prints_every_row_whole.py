"""A report piped to another program or a file prints each table row whole on one line —
no cell cut or wrapped at 80 columns, as rich does when it cannot ask a terminal — so
`grep` and `less -S` see whole rows; ``COLUMNS`` still sets a width when given."""

from __future__ import annotations

import pytest

from pipeline.cli import main
from pipeline.platform.deadletters import set_aside
from pipeline.store import Store

REASON = "a reason far longer than any terminal is wide: " + "word " * 40


def test_a_long_reason_stays_on_its_rows_line(
    aimed: Store, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    set_aside(aimed.client, aimed.keys.prefix, "lifecycle", "raw", REASON.strip())
    assert main(["deadletters"]) == 0
    out = capsys.readouterr().out
    [row] = [line for line in out.splitlines() if "lifecycle" in line]
    assert REASON.strip() in row


def test_columns_still_chooses_the_width(
    aimed: Store, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    set_aside(aimed.client, aimed.keys.prefix, "lifecycle", "raw", REASON.strip())
    assert main(["deadletters"]) == 0
    assert all(len(line) <= 80 for line in capsys.readouterr().out.splitlines())

"""Messages set aside as dead letters show in `coral2-pipeline status` (flagged, with the
latest's origin and reason), are listed by `coral2-pipeline deadletters`, and are dropped
by its `--clear` (the count of every one ever set aside stays)."""

from __future__ import annotations

import json
import time

import pytest

from pipeline.cli import main
from pipeline.platform.deadletters import set_aside
from pipeline.store import Store
from tests.cli.status_helpers import Status, as_json


def test_a_dead_letter_is_flagged_by_status(status: Status, aimed: Store) -> None:
    aimed.client.set(aimed.keys.watcher_leader, "watcher-a", px=60_000)
    aimed.client.set(aimed.keys.beat_tick, f"{time.time()} beat-a")
    set_aside(aimed.client, aimed.keys.prefix, "lifecycle", b"\xff\x00", "not a kombu message")
    code, report = as_json(status)
    assert code == 1
    assert (report["dead_letters"], report["dead_letters_total"]) == (1, 1)
    [flag] = report["flags"]
    assert "1 message(s) set aside" in flag and "from lifecycle" in flag
    assert "coral2-pipeline deadletters" in flag


def test_deadletters_lists_newest_first_then_clear_drops_them(
    aimed: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    for n in range(3):
        set_aside(aimed.client, aimed.keys.prefix, f"q{n}", f"raw {n}", f"reason {n}")
    assert main(["deadletters", "--json", "--limit", "2"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert (answer["kept"], answer["total"]) == (3, 3)
    rows = answer["letters"]
    assert [r["where"] for r in rows] == ["q2", "q1"]
    assert rows[0]["raw"] == "raw 2" and rows[0]["size"] == 5
    assert main(["deadletters", "--clear"]) == 0
    assert "dropped 3" in capsys.readouterr().out
    assert aimed.dead_letters.counts() == (0, 3)
    assert main(["deadletters", "--json"]) == 0  # none kept: still one object
    assert json.loads(capsys.readouterr().out) == {"kept": 0, "total": 3, "letters": []}


def test_a_bad_limit_is_one_clear_line(aimed: Store, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["deadletters", "--limit", "0"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip() == (
        "coral2-pipeline deadletters: argument --limit: 0 is out of range: give 1-100000 "
        "(see coral2-pipeline deadletters --help)"
    )

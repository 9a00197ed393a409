"""``coral2-pipeline resource``: ``status`` shows the drained nodes with reasons and times
(a table, or JSON), ``drain`` and ``undrain`` go to Flux through the outbox, ``journal``
prints the history then the sentinel, and an eventlog no Flux has written yet is one
clear line."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pipeline.cli import main
from pipeline.store import Store


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["resource", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def instance(aimed: Store) -> Store:
    restart = {"ranks": "0-3", "online": "", "nodelist": "n[0-3]"}
    drain = {
        "idset": "2",
        "nodelist": "n2",
        "overwrite": 0,
        "reason": "rabbit lost PCIe connection",
    }
    aimed.resource_log.post(
        {"timestamp": 1.0, "name": "restart", "context": restart},
        {"timestamp": 1.5, "name": "online", "context": {"idset": "0-3"}},
        {"timestamp": 1764115200.0, "name": "drain", "context": drain},
    )
    return aimed


def test_status_lists_drained_nodes_with_reason_and_time(
    instance: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "status")
    assert code == 0
    assert "drained: 1 of 4 nodes" in out
    assert "n2" in out and "rabbit lost PCIe" in out
    code, out, _ = run(capsys, "status", "--json")
    assert json.loads(out)["drained"] == [
        {
            "host": "n2",
            "rank": 2,
            "timestamp": 1764115200.0,
            "reason": "rabbit lost PCIe connection",
        }
    ]


def test_drain_and_undrain_go_to_flux_through_the_outbox(
    instance: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "drain", "--no-wait", "n[0-1]", "bad", "fan")[0] == 0
    assert run(capsys, "drain", "--no-wait", "-u", "n0", "worse")[0] == 0
    assert run(capsys, "undrain", "--no-wait", "n1")[0] == 0
    entries: Any = instance.client.xrange(instance.keys.outbox)
    sent = [(f[b"kind"].decode(), json.loads(f[b"payload"])) for _, f in entries]
    assert sent == [
        ("drain", {"targets": "n[0-1]", "reason": "bad fan"}),
        ("drain", {"targets": "n0", "reason": "worse", "mode": "update"}),
        ("undrain", {"targets": "n1"}),
    ]


def test_journal_prints_the_history_then_the_sentinel(
    instance: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "journal")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [e["name"] for e in lines[0]["events"]] == ["restart", "online", "drain"]
    assert lines[-1] == {"events": []}


def test_compact_folds_the_eventlog(instance: Store, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "compact")
    assert (code, out.strip()) == (0, "resource eventlog: 3 events folded into 2")
    assert run(capsys, "status", "--json")[1].count('"n2"') == 1


def test_an_eventlog_no_flux_wrote_is_one_clear_line(
    aimed: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "status")
    assert (code, out) == (1, "")
    assert "no restart event yet" in err and "Traceback" not in err


def test_a_drain_of_a_bad_hostlist_is_one_clear_line(
    aimed: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "drain", "n[3-1]")
    assert code == 1 and "decreasing" in err and "Traceback" not in err

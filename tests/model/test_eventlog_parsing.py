"""RFC 18 eventlogs parse line by line and name the bad line."""

from __future__ import annotations

import pytest

from pipeline.errors import EventlogError
from pipeline.model.eventlog import EventlogEntry, format_eventlog, parse_eventlog

TEXT = (
    '{"timestamp":1700000000.5,"name":"submit","context":{"userid":42}}\n'
    '{"timestamp":1700000001.0,"name":"depend"}\n'
)


def test_entries_keep_name_timestamp_and_context() -> None:
    entries = parse_eventlog(TEXT)
    assert [(e.name, e.timestamp, e.context) for e in entries] == [
        ("submit", 1700000000.5, {"userid": 42}),
        ("depend", 1700000001.0, None),
    ]


def test_formatting_round_trips() -> None:
    assert parse_eventlog(format_eventlog(parse_eventlog(TEXT))) == parse_eventlog(TEXT)


def test_a_line_that_is_not_json_is_named_by_number() -> None:
    with pytest.raises(EventlogError, match="line 2: not JSON"):
        parse_eventlog('{"timestamp":1,"name":"a"}\n{oops\n')


def test_missing_names_and_negative_timestamps_are_rejected() -> None:
    with pytest.raises(EventlogError, match="name"):
        parse_eventlog('{"timestamp":1}\n')
    with pytest.raises(EventlogError, match="timestamp"):
        parse_eventlog('{"timestamp":-1,"name":"a"}\n')


def test_an_entry_serialises_as_one_line() -> None:
    assert EventlogEntry(timestamp=2.0, name="x").to_line() == '{"timestamp":2.0,"name":"x"}\n'

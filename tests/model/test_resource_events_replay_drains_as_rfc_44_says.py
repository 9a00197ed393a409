"""RFC 44 drains replay against today's nodelist: overwrite 0 keeps a drained target as it
is, 1 updates its reason, 2 its reason and timestamp; undrain clears; a host that moved
rank is followed by name, one that left is dropped."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.model.resource_events import (
    JOURNAL_ONLY,
    PERSISTENT,
    ResourceEventError,
    check_event,
    drained,
)


def drain(
    t: float, idset: str, nodelist: str, overwrite: int, reason: str | None = None
) -> dict[str, Any]:
    context: dict[str, Any] = {"idset": idset, "nodelist": nodelist, "overwrite": overwrite}
    if reason is not None:
        context["reason"] = reason
    return {"timestamp": t, "name": "drain", "context": context}


def undrain(t: float, idset: str, nodelist: str) -> dict[str, Any]:
    return {"timestamp": t, "name": "undrain", "context": {"idset": idset, "nodelist": nodelist}}


#: the RFC's own examples
RESTART = {
    "timestamp": 1738083782.295166,
    "name": "restart",
    "context": {"ranks": "0-3", "online": "", "nodelist": "picl[0-3]"},
}
RFC_DRAIN = drain(1733965155.6272159, "0", "picl0", 0, "unkillable processes for job ƒ4zX8UnMMxj")
RFC_UNDRAIN = undrain(1734395501.1793933, "0", "picl0")


def test_the_rfcs_examples_are_valid_events() -> None:
    examples = [
        RESTART,
        {
            "timestamp": 1733943875.258601,
            "name": "resource-define",
            "context": {"method": "configuration"},
        },
        {
            "timestamp": 1738006627.292861,
            "name": "resource-update",
            "context": {"expiration": 1738009133},
        },
        RFC_DRAIN,
        RFC_UNDRAIN,
        {"timestamp": 1738007023.0803587, "name": "online", "context": {"idset": "1-15"}},
        {"timestamp": 1738007048.9008777, "name": "offline", "context": {"idset": "12"}},
        {"timestamp": 1738007023.0803587, "name": "torpid", "context": {"idset": "7"}},
        {"timestamp": 1738007023.0803587, "name": "lively", "context": {"idset": "7"}},
    ]
    assert [check_event(e)["name"] for e in examples] == [e["name"] for e in examples]


def test_the_rfcs_drain_then_undrain_leaves_nothing_drained() -> None:
    assert drained([RESTART, RFC_DRAIN], "picl[0-3]") == {
        0: (1733965155.6272159, "unkillable processes for job ƒ4zX8UnMMxj")
    }
    assert drained([RESTART, RFC_DRAIN, RFC_UNDRAIN], "picl[0-3]") == {}


def test_overwrite_0_changes_nothing_for_a_drained_target() -> None:
    log = [drain(1, "0", "n0", 0, "first"), drain(2, "0-1", "n[0-1]", 0, "second")]
    assert drained(log, "n[0-3]") == {0: (1.0, "first"), 1: (2.0, "second")}


def test_overwrite_1_updates_the_reason_but_not_the_timestamp() -> None:
    log = [drain(1, "0", "n0", 0, "first"), drain(2, "0", "n0", 1, "second")]
    assert drained(log, "n[0-3]") == {0: (1.0, "second")}


def test_overwrite_2_updates_the_reason_and_the_timestamp() -> None:
    log = [drain(1, "0", "n0", 0, "first"), drain(2, "0", "n0", 2, "second")]
    assert drained(log, "n[0-3]") == {0: (2.0, "second")}


def test_a_drain_without_a_reason_has_an_empty_one() -> None:
    assert drained([drain(5, "3", "n3", 0)], "n[0-3]") == {3: (5.0, "")}


def test_undrain_clears_only_its_targets() -> None:
    log = [drain(1, "0-3", "n[0-3]", 0, "maint"), undrain(2, "1,3", "n[1,3]")]
    assert drained(log, "n[0-3]") == {0: (1.0, "maint"), 2: (1.0, "maint")}


def test_a_host_that_moved_rank_across_a_restart_stays_drained_under_its_name() -> None:
    log = [drain(1, "2", "n2", 0, "bad dimm"), drain(2, "0", "n0", 0, "fan")]
    # n2 is rank 0 today, n0 is rank 3
    assert drained(log, "n[2,1,5,0]") == {0: (1.0, "bad dimm"), 3: (2.0, "fan")}


def test_a_host_that_left_the_instance_is_dropped() -> None:
    log = [drain(1, "2", "n2", 0, "gone"), drain(2, "1", "n1", 0, "here")]
    assert drained(log, "n[0-1]") == {1: (2.0, "here")}


def test_a_nodelist_of_the_whole_instance_names_each_rank() -> None:
    assert drained([drain(1, "1,3", "n[0-3]", 0, "x")], "n[0-3]") == {1: (1.0, "x"), 3: (1.0, "x")}


def test_events_other_than_drain_and_undrain_change_no_drain() -> None:
    log = [
        RESTART,
        drain(1, "1", "picl1", 0, "x"),
        {"timestamp": 2, "name": "offline", "context": {"idset": "1"}},
    ]
    assert drained(log, "picl[0-3]") == {1: (1.0, "x")}


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (
            {"timestamp": 1, "name": "drain", "context": {"idset": "0", "overwrite": 0}},
            "'drain': context key 'nodelist' is required",
        ),
        (
            {
                "timestamp": 1,
                "name": "drain",
                "context": {"idset": "0", "nodelist": "n0", "overwrite": 3},
            },
            "overwrite must be 0, 1 or 2",
        ),
        (
            {"timestamp": 1, "name": "restart", "context": {"ranks": "0", "online": ""}},
            "'restart': context key 'nodelist' is required",
        ),
        (
            {"timestamp": 1, "name": "resource-define", "context": {"method": "guess"}},
            "method 'guess' is not one of",
        ),
        (
            {"timestamp": 1, "name": "resource-update", "context": {"expiration": "soon"}},
            "'expiration' must be an integer",
        ),
        (
            {"timestamp": 1, "name": "online", "context": {"idset": "3-1"}},
            "'online': context key 'idset'",
        ),
        ({"timestamp": 1, "name": "reboot", "context": {}}, "'reboot': unknown event"),
        (
            {"timestamp": "now", "name": "online", "context": {"idset": "1"}},
            "timestamp must be a number",
        ),
        ({"timestamp": 1, "name": "undrain"}, "'undrain': a context object is required"),
    ],
)
def test_a_bad_event_is_refused_naming_the_event_and_the_key(
    event: dict[str, Any], message: str
) -> None:
    with pytest.raises(ResourceEventError, match=message.replace("(", r"\(")):
        check_event(event)


def test_a_drain_whose_nodelist_does_not_cover_its_idset_is_refused_on_replay() -> None:
    with pytest.raises(ResourceEventError, match="names 2 hosts for the 3 ranks"):
        drained([drain(1, "0-2", "n[0-1]", 0)], "n[0-3]")


def test_persistent_and_journal_only_events_are_apart() -> None:
    assert {"restart", "resource-define", "resource-update", "drain", "undrain"} == PERSISTENT
    assert {"online", "offline", "torpid", "lively", "truncate"} == JOURNAL_ONLY

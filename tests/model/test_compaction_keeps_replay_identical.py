"""Compacting a resource eventlog keeps what it replays to: ``drained(compact(log)) ==
drained(log)``, for random logs of drains (overwrite 0, 1, 2), undrains, online and
offline events, and it keeps only the latest restart, resource-define and
resource-update."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from pipeline.model.hostlist import encode_hostlist
from pipeline.model.idset import encode_idset
from pipeline.model.resource_events import check_event, compact, drained

HOSTS = [f"n{i}" for i in range(8)]
NODELIST = encode_hostlist(HOSTS)


@st.composite
def events(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "timestamp": 0.0,
            "name": "restart",
            "context": {"ranks": "0-7", "online": "", "nodelist": NODELIST},
        }
    ]
    for t in range(1, draw(st.integers(0, 40)) + 1):
        ranks = sorted(draw(st.sets(st.integers(0, 7), min_size=1, max_size=4)))
        context: dict[str, Any] = {"idset": encode_idset(ranks)}
        kind = draw(st.sampled_from(["drain", "drain", "undrain", "online", "offline"]))
        if kind in ("drain", "undrain"):
            context["nodelist"] = encode_hostlist(HOSTS[r] for r in ranks)
        if kind == "drain":
            context["overwrite"] = draw(st.sampled_from([0, 1, 2]))
            reason = draw(st.sampled_from([None, "a", "b", "c"]))
            if reason is not None:
                context["reason"] = reason
        out.append({"timestamp": float(t), "name": kind, "context": context})
    return out


@given(events(), st.permutations(HOSTS), st.integers(0, 8))
@settings(max_examples=300, deadline=None)
def test_compaction_replays_to_the_same_drains_under_any_later_nodelist(
    log: list[dict[str, Any]], order: list[str], keep: int
) -> None:
    folded = compact(log)
    for event in folded:
        check_event(event)
    assert drained(folded, NODELIST) == drained(log, NODELIST)
    today = encode_hostlist(order[:keep]) if keep else "x0"  # ranks moved, some hosts gone
    assert drained(folded, today) == drained(log, today)


OVERWRITE_KEEPS_A_TIMESTAMP = [  # found by Hypothesis: folding it gives more drains
    {
        "timestamp": 0.0,
        "name": "restart",
        "context": {"ranks": "0-7", "online": "", "nodelist": "n[0-7]"},
    },
    {
        "timestamp": 1.0,
        "name": "drain",
        "context": {"idset": "0-1", "nodelist": "n[0-1]", "overwrite": 0},
    },
    {
        "timestamp": 2.0,
        "name": "drain",
        "context": {"idset": "0,2", "nodelist": "n[0,2]", "overwrite": 1, "reason": "a"},
    },
]


@given(events())
@example(OVERWRITE_KEEPS_A_TIMESTAMP)
@settings(max_examples=100, deadline=None)
def test_compaction_keeps_no_journal_only_event_and_one_restart(log: list[dict[str, Any]]) -> None:
    folded = compact(log)
    names = [e["name"] for e in folded]
    assert names.count("restart") == 1
    assert not {"online", "offline", "undrain"} & set(names)
    assert len(folded) <= len(log)


def test_only_the_latest_define_and_update_are_kept() -> None:
    log = [
        {"timestamp": 1.0, "name": "resource-define", "context": {"method": "configuration"}},
        {"timestamp": 2.0, "name": "resource-update", "context": {"expiration": 10}},
        {"timestamp": 3.0, "name": "resource-define", "context": {"method": "reload"}},
        {"timestamp": 4.0, "name": "resource-update", "context": {"expiration": 20}},
    ]
    assert compact(log) == log[2:]

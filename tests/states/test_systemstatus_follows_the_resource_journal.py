"""SystemStatus follows the resource journal: online hosts Enabled, offline ones Disabled,
hosts our drains disabled stay Disabled until their undrain, then Enabled again. Each
call returns what the journal says now and leaves what it was given as it was."""

from __future__ import annotations

from typing import Any

from pipeline.states.systemstatus import Seen, follow


def event(name: str, **context: Any) -> dict[str, Any]:
    return {"timestamp": 1.0, "name": name, "context": context}


def test_a_restart_enables_online_hosts_and_disables_the_rest() -> None:
    seen = Seen()
    patch, _, after = follow([event("restart", ranks="0-2", online="0,2", nodelist="n[0-2]")], seen)
    assert patch == {"n0": "Enabled", "n1": "Disabled", "n2": "Enabled"}
    assert after.online == {"n0", "n2"} and seen == Seen()  # the argument is left as it was


def test_hosts_going_offline_and_online_are_patched_once() -> None:
    _, _, seen = follow([event("restart", ranks="0-2", online="0-2", nodelist="n[0-2]")], Seen())
    patch, _, seen = follow([event("offline", idset="1"), event("online", idset="0-1")], seen)
    assert patch == {"n1": "Enabled"}  # n0 was online already: nothing new for it
    assert seen.online == {"n0", "n1", "n2"}


def test_a_host_our_drain_disabled_is_enabled_again_by_its_undrain() -> None:
    seen = Seen(disabled={"n1"})
    _, _, seen = follow([event("restart", ranks="0-2", online="0-2", nodelist="n[0-2]")], seen)
    patch, undrained, seen = follow([event("online", idset="1")], seen)
    assert patch == {"n1": "Disabled"}  # online, but our drain holds it
    patch, undrained, seen = follow([event("undrain", idset="1", nodelist="n1")], seen)
    assert (patch, undrained, seen.disabled) == ({"n1": "Enabled"}, {"n1"}, set())


def test_an_undrained_host_that_is_offline_stays_disabled() -> None:
    seen = Seen(disabled={"n2"})
    _, _, seen = follow([event("restart", ranks="0-2", online="0-1", nodelist="n[0-2]")], seen)
    patch, undrained, _ = follow([event("undrain", idset="2", nodelist="n2")], seen)
    assert (patch, undrained) == ({"n2": "Disabled"}, {"n2"})


def test_a_truncated_journal_names_its_hosts_again_and_ranks_past_them_are_nobody() -> None:
    seen = Seen()
    _, _, seen = follow([event("truncate", nodelist="m[0-1]")], seen)
    assert seen.hosts == ["m0", "m1"]
    patch, _, seen = follow([event("offline", idset="1-2")], seen)  # rank 2 names no host
    assert patch == {"m1": "Disabled"}
    _, _, kept = follow([event("truncate")], seen)  # one that names none changes nothing
    assert kept.hosts == ["m0", "m1"]


def test_an_undrain_of_a_host_no_drain_of_ours_disabled_changes_nothing() -> None:
    seen = Seen(disabled={"n1"})
    _, _, seen = follow([event("restart", ranks="0-2", online="0-2", nodelist="n[0-2]")], seen)
    patch, undrained, after = follow([event("undrain", idset="2", nodelist="n2")], seen)
    assert (patch, undrained, after.disabled) == ({"n1": "Disabled"}, set(), {"n1"})


def test_two_undrains_in_one_pass_enable_both() -> None:
    seen = Seen(disabled={"n0", "n1"})
    _, _, seen = follow([event("restart", ranks="0-2", online="0-2", nodelist="n[0-2]")], seen)
    events = [
        event("undrain", idset="0", nodelist="n0"),
        event("undrain", idset="1", nodelist="n1"),
    ]
    patch, undrained, _ = follow(events, seen)
    assert (patch, undrained) == ({"n0": "Enabled", "n1": "Enabled"}, {"n0", "n1"})

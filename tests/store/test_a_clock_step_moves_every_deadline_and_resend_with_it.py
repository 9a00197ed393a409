"""A clock step moves every deadline and every ledger resend by the step, at the first
write or sweep that sees it and before anything is written under the new clock: a step
forward fires nothing early, a step back delays nothing, a due time written after the
step is not moved again, and an ordinary second between sweeps moves nothing."""

from __future__ import annotations

from pipeline.store import Deadline, Store

GRACE_S = 30.0


def armed(store: Store) -> dict[int, float]:
    return {d.jobid: d.due for d in store.deadlines.pending()}


def resend_at(store: Store, task_id: str) -> float | None:
    return store.client.zscore(store.keys.ledger_due, task_id)


def setup(store: Store, now: float) -> None:
    store.deadlines.add(Deadline(1, "prolog_timeout", "a", now + 300.0))
    store.deadlines.add(Deadline(2, "setup_timeout", "b", now + 10.0))
    store.ledger.note("t1", "node.prolog", {"jobid": 1}, now=now, resend_after_s=60.0)
    assert store.deadlines.rebase(now, GRACE_S) == 0.0  # the first sweep: nothing to compare


def test_a_step_forward_of_an_hour_fires_no_deadline(store: Store) -> None:
    setup(store, 1000.0)
    assert store.deadlines.rebase(1001.0, GRACE_S) == 0.0  # a second later: nothing moves
    assert store.deadlines.rebase(1001.0 + 3600.0, GRACE_S) == 3600.0
    assert armed(store) == {1: 4900.0, 2: 4610.0}
    assert resend_at(store, "t1") == 4660.0
    assert store.deadlines.claim_due(1001.0 + 3600.0) == []


def test_a_step_back_of_an_hour_delays_no_deadline(store: Store) -> None:
    setup(store, 10_000.0)
    assert store.deadlines.rebase(10_000.0 - 3600.0, GRACE_S) == -3600.0
    assert armed(store) == {1: 6700.0, 2: 6410.0}
    assert resend_at(store, "t1") == 6460.0
    [due] = store.deadlines.claim_due(6410.0)
    assert due.jobid == 2


def test_sweeps_within_the_grace_move_nothing(store: Store) -> None:
    setup(store, 500.0)
    for now in (501.0, 510.0, 540.0, 541.5):
        assert store.deadlines.rebase(now, GRACE_S) == 0.0
    assert armed(store) == {1: 800.0, 2: 510.0}
    assert resend_at(store, "t1") == 560.0


def test_a_deadline_armed_after_a_step_moves_the_others_first_and_itself_never(
    store: Store,
) -> None:
    setup(store, 1000.0)
    stepped = 1000.0 + 3600.0
    store.deadlines.add(Deadline(3, "postrun_timeout", "c", stepped + 60.0), now=stepped)
    assert armed(store) == {1: 4900.0, 2: 4610.0, 3: 4660.0}
    assert store.deadlines.rebase(stepped + 1.0, GRACE_S) == 0.0  # the sweep: nothing left
    assert armed(store) == {1: 4900.0, 2: 4610.0, 3: 4660.0}


def test_a_message_noted_after_a_step_back_moves_the_rest_first(store: Store) -> None:
    setup(store, 10_000.0)
    stepped = 10_000.0 - 3600.0
    store.ledger.note("t2", "dws.observe", {"jobid": 2}, now=stepped, resend_after_s=60.0)
    assert resend_at(store, "t1") == 6460.0
    assert resend_at(store, "t2") == 6460.0
    assert armed(store) == {1: 6700.0, 2: 6410.0}

"""After Redis restarted or lost writes (the store's generation changed), the message of
any sent task may be gone: every ledger entry falls due at once, not ``resend_after``
later. The first generation the redeliverer sees, and the same one again, change nothing."""

from __future__ import annotations

from pipeline.store import Store


def test_a_new_generation_makes_every_entry_due_now(store: Store) -> None:
    ledger = store.ledger
    ledger.note("t1", "dws.observe", {"jobid": 1}, now=1000.0, resend_after_s=120.0)
    ledger.note("t2", "dws.observe", {"jobid": 2}, now=1000.0, resend_after_s=120.0)
    assert ledger.all_due_after_a_loss("run-a epoch-1", now=1001.0) == 0  # the first look
    assert ledger.due(1001.0) == []
    assert ledger.all_due_after_a_loss("run-a epoch-1", now=1002.0) == 0  # the same
    assert ledger.due(1002.0) == []
    assert ledger.all_due_after_a_loss("run-b epoch-1", now=1003.0) == 2  # restarted
    assert {entry.task_id for entry in ledger.due(1003.0)} == {"t1", "t2"}

"""Node answers are counted in a set: duplicates add nothing, no answer before the last
completes a phase, the last (and any copy of it: its first run may have died before
acting on it) does, and the mounted flag reaches every node once it is set."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from pipeline.store import Store


def test_the_answer_that_completes_the_set_and_its_copies_say_so(store: Store) -> None:
    store.tally.expect(1, 3)
    first = store.tally.add(1, "prolog", "n1")
    again = store.tally.add(1, "prolog", "n1")
    assert (first.new, first.count, first.completes) == (True, 1, False)
    assert (again.new, again.count) == (False, 1)
    store.tally.add(1, "prolog", "n2")
    assert store.tally.add(1, "prolog", "n3").completes
    again = store.tally.add(1, "prolog", "n3")  # a copy of the last
    assert (again.new, again.completes) == (False, True)


def test_of_many_concurrent_answers_only_those_counted_last_complete(store: Store) -> None:
    nodes = [f"n{i}" for i in range(400)]
    store.tally.expect(2, len(nodes))
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda n: store.tally.add(2, "prolog", n), nodes))
    assert [r.completes for r in results].count(True) == 1
    assert all(r.count == len(nodes) for r in results if r.completes)
    assert store.tally.nodes(2, "prolog") == set(nodes)


def test_the_mounted_flag_reaches_answers_before_and_after_it(store: Store) -> None:
    store.tally.expect(3, 2)
    store.tally.add(3, "prolog", "n1")
    assert store.tally.flag(3, "mounted", "prolog") == {"n1"}  # told by the flag's side
    assert "mounted" in store.tally.add(3, "prolog", "n2").flags  # tells itself


def test_forgetting_a_job_drops_its_sets(store: Store) -> None:
    store.tally.expect(4, 1)
    store.tally.add(4, "prolog", "n1")
    store.tally.forget(4)
    assert store.tally.nodes(4, "prolog") == set()

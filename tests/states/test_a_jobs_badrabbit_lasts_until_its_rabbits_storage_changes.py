"""``badrabbit`` that a job's PreRun timeout gave computes whose mounts did not come up is
held in the rabbit's record: a pass over the same Storage keeps it, the rabbit's next
Storage change removes it from every compute that is not down (as flux-coral2 does on the
rabbit's next Storage event), and a new Flux incarnation, which lost it, forgets it."""

from __future__ import annotations

from pipeline.states.rabbits import Change, Message, RabbitPolicy, Told, decide

COMPUTES = ["c1", "c2", "c3"]
SSDS = ["/demo/chassis0/ssd0"]
HARD = RabbitPolicy(drain_compute_nodes=True)
SOFT = RabbitPolicy(drain_compute_nodes=False, soft_drain=True)
REMOVE_C2 = Message("remove-property", {"targets": "c2", "key": "badrabbit"})


def storage_pass(
    told: Told, version: str, offline: frozenset[str] | set[str] = frozenset(), **kw: object
) -> Change:
    policy = kw.get("policy", HARD)
    assert isinstance(policy, RabbitPolicy)
    return decide("Ready", offline, COMPUTES, SSDS, policy, told, "1", version)


def held_on_c2() -> Told:
    return storage_pass(Told(), "7").told.hold(["c2"], "1")


def test_a_pass_over_the_same_storage_keeps_a_jobs_badrabbit() -> None:
    again = storage_pass(held_on_c2(), "7")
    assert again.messages == []
    assert again.told.held == {"c2"}


def test_the_rabbits_next_storage_change_removes_it() -> None:
    changed = storage_pass(held_on_c2(), "8")
    assert changed.messages == [REMOVE_C2]
    assert changed.told.held == frozenset()
    assert storage_pass(changed.told, "9").messages == []  # removed once


def test_a_compute_that_is_down_under_soft_drain_keeps_it_without_a_second_set() -> None:
    told = storage_pass(Told(), "7", policy=SOFT).told.hold(["c2"], "1")
    changed = storage_pass(told, "8", frozenset({"c2"}), policy=SOFT)
    assert changed.messages == []  # c2 is down: it keeps the property it already has
    assert changed.told.badrabbit == {"c2"}
    assert storage_pass(changed.told, "9", policy=SOFT).messages == [REMOVE_C2]


def test_a_new_flux_incarnation_forgets_what_the_old_one_held() -> None:
    told = held_on_c2()
    assert told.hold(["c3"], "2").held == {"c3"}
    assert decide("Ready", set(), COMPUTES, SSDS, HARD, told, "2", "7").told.held == frozenset()


def test_the_record_survives_its_json_form() -> None:
    told = held_on_c2()
    assert Told.from_json(told.to_json()) == told

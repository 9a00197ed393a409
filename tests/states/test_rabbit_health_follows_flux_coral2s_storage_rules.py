"""A Storage event tells Flux what flux-coral2's FluxionRabbitManager would, and only what
changed: computes that lost their rabbit are drained (or marked ``badrabbit`` with
``soft_drain``), the rabbit's ssds go up when it is Ready and down when not, computes
Flux does not know get nothing, and the same event twice sends nothing new."""

from __future__ import annotations

from pipeline.states.rabbits import (
    PCIE_REASON,
    Change,
    Message,
    RabbitPolicy,
    Told,
    decide,
    offline_computes,
    storage_status,
)

COMPUTES = ["c1", "c2", "c3", "c4"]
SSDS = ["/demo/chassis0/ssd0", "/demo/chassis0/ssd1"]
HARD = RabbitPolicy(drain_compute_nodes=True)
SOFT = RabbitPolicy(drain_compute_nodes=False, soft_drain=True)
NEITHER = RabbitPolicy(drain_compute_nodes=False, soft_drain=False)
NOTHING = Told()


def run(
    status: str | None,
    offline: set[str],
    policy: RabbitPolicy,
    told: Told = NOTHING,
    epoch: str = "1",
) -> Change:
    return decide(status, offline, COMPUTES, SSDS, policy, told, epoch)


def kinds(decision: Change) -> list[str]:
    return [m.kind for m in decision.messages]


def test_a_ready_rabbit_brings_its_ssds_up_once() -> None:
    first = run("Ready", set(), HARD)
    assert first.messages == [
        Message("set-status", {"resource_path": p, "status": "up"}) for p in SSDS
    ]
    assert run("Ready", set(), HARD, first.told).messages == []


def test_a_rabbit_that_is_not_ready_takes_its_ssds_down() -> None:
    up = run("Ready", set(), HARD).told
    down = run("Offline", set(), HARD, up)
    assert down.messages == [
        Message("set-status", {"resource_path": p, "status": "down"}) for p in SSDS
    ]


def test_a_storage_without_status_counts_as_down() -> None:
    assert {m.payload["status"] for m in run(None, set(), HARD).messages} == {"down"}


def test_computes_that_lost_pcie_are_drained_with_coral2_dws_reason() -> None:
    decision = run("Ready", {"c2", "c3"}, HARD)
    assert decision.messages[0] == Message(
        "drain", {"targets": "c[2-3]", "reason": PCIE_REASON, "mode": "update"}
    )
    again = run("Ready", {"c2", "c3"}, HARD, decision.told)
    assert again.messages == []  # replaying the event sends nothing new
    worse = run("Ready", {"c2", "c3", "c4"}, HARD, again.told)
    assert worse.messages[0].payload["targets"] == "c4"  # only the newly lost one


def test_a_compute_that_comes_back_and_is_lost_again_is_drained_again() -> None:
    lost = run("Ready", {"c1"}, HARD).told
    back = run("Ready", set(), HARD, lost).told
    assert kinds(run("Ready", {"c1"}, HARD, back)) == ["drain"]


def test_drain_queues_limit_which_computes_are_drained() -> None:
    policy = RabbitPolicy(drain_compute_nodes=True, drainable=frozenset({"c1"}))
    decision = run("Ready", {"c1", "c2"}, policy)
    assert decision.messages[0].payload["targets"] == "c1"


def test_soft_drain_marks_badrabbit_only_while_the_rabbit_is_ready() -> None:
    marked = run("Ready", {"c2"}, SOFT)
    assert (
        Message("set-property", {"targets": "c2", "key": "badrabbit", "value": "bad"})
        in marked.messages
    )
    assert "drain" not in kinds(marked)
    offline = run("Offline", {"c2"}, SOFT, marked.told)  # handled by ssd status instead
    assert Message("remove-property", {"targets": "c2", "key": "badrabbit"}) in offline.messages


def test_without_drain_or_soft_drain_nothing_but_ssds_changes() -> None:
    assert set(kinds(run("Ready", {"c2"}, NEITHER))) == {"set-status"}


def test_computes_flux_does_not_know_get_no_rpc() -> None:
    decision = decide("Ready", {"c9", "c2"}, COMPUTES, SSDS, HARD, Told(), "1")
    assert decision.messages[0].payload["targets"] == "c2"
    assert not any("c9" in str(m.payload) for m in decision.messages)


def test_a_new_flux_incarnation_is_told_everything_again() -> None:
    told = run("Ready", {"c1"}, HARD, epoch="1").told
    assert run("Ready", {"c1"}, HARD, told, epoch="1").messages == []
    assert kinds(run("Ready", {"c1"}, HARD, told, epoch="2")) == [
        "drain",
        "set-status",
        "set-status",
    ]


def test_what_a_storage_says_is_read_as_coral2_dws_reads_it() -> None:
    storage = {
        "status": {
            "status": "Degraded",
            "access": {
                "computes": [{"name": "c1", "status": "Ready"}, {"name": "c2", "status": "Offline"}]
            },
        }
    }
    assert storage_status(storage) == "Degraded"
    assert offline_computes(storage) == {"c2"}
    assert (storage_status({}), offline_computes({})) == (None, frozenset())

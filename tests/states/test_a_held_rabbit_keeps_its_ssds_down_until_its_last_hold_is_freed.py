"""A rabbit held by jobs whose epilog went before their Teardown completed keeps its ssds
down whatever its Storage says; they come up when the last hold is freed, only if the
Storage was Ready; and a Flux restart, which forgets what Flux was told, keeps the holds."""

from __future__ import annotations

from pipeline.states.rabbits import Change, RabbitPolicy, Told, decide, free, hold

SSDS = ["/demo/chassis0/ssd0", "/demo/chassis0/ssd1"]
POLICY = RabbitPolicy()


def storage_pass(told: Told, status: str = "Ready", epoch: str = "1") -> Change:
    return decide(status, set(), ["c1"], SSDS, POLICY, told, epoch, "v1")


def statuses(decision: Change) -> list[str]:
    return [m.payload["status"] for m in decision.messages]


def up() -> Told:
    return storage_pass(Told()).told


def test_a_hold_takes_the_ssds_down_and_a_ready_storage_does_not_bring_them_up() -> None:
    held = hold(up(), "7", "1")
    assert statuses(held) == ["down", "down"]
    assert storage_pass(held.told).messages == []


def test_the_last_hold_freed_brings_them_up() -> None:
    both = hold(hold(up(), "7", "1").told, "8", "1").told
    one_left = free(both, "7", "1")
    assert one_left.messages == []
    assert statuses(free(one_left.told, "8", "1")) == ["up", "up"]


def test_a_rabbit_not_ready_stays_down_when_freed() -> None:
    held = hold(up(), "7", "1").told
    offline = storage_pass(held, "Offline").told
    assert free(offline, "7", "1").messages == []


def test_a_flux_restart_keeps_the_holds() -> None:
    held = hold(up(), "7", "1").told
    restarted = storage_pass(held, epoch="2")
    assert statuses(restarted) == ["down", "down"]  # dws2jgf's down, told again
    assert restarted.told.holders == {"7"}
    assert statuses(free(restarted.told, "7", "2")) == ["up", "up"]


def test_a_hold_is_kept_in_the_records_json_form() -> None:
    held = hold(up(), "7", "1").told
    assert Told.from_json(held.to_json()) == held

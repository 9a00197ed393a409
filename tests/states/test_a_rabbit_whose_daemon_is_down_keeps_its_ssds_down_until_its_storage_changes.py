"""A rabbit whose own ClientMount never came up by ``prerun_timeout`` (its node daemon
down) is handled as a rabbit: its ssds go down in Flux, so no new job is scheduled on
storage it cannot serve, and stay down through replays of the same Storage; the
rabbit's next Storage change (the daemon back) decides them again. A job's hold freed
meanwhile does not bring them up."""

from __future__ import annotations

from pipeline.model.job import JobRecord
from pipeline.states.actions import RabbitDaemonDown
from pipeline.states.deadlines import prerun_timeout
from pipeline.states.rabbits import Change, RabbitPolicy, Told, daemon_down, decide, free, hold

SSDS = ["/demo/chassis0/ssd0", "/demo/chassis0/ssd1"]


def storage_pass(told: Told, version: str, status: str = "Ready") -> Change:
    return decide(status, set(), ["c1"], SSDS, RabbitPolicy(), told, "1", version)


def statuses(decision: Change) -> list[str]:
    return [m.payload["status"] for m in decision.messages]


def test_the_prerun_timeout_names_the_rabbit_whatever_the_jobs_tolerance() -> None:
    for tolerance in (0, 1):
        job = JobRecord(jobid=7, hosts=["c1", "c2"], failure_tolerance=tolerance)
        actions = prerun_timeout(job, [], {}, ["rabbit1"])
        assert RabbitDaemonDown(("rabbit1",)) in actions


def test_its_ssds_go_down_and_a_replay_of_its_storage_keeps_them_down() -> None:
    up = storage_pass(Told(), "v1").told
    down = daemon_down(up, "1")
    assert statuses(down) == ["down", "down"]
    assert storage_pass(down.told, "v1").messages == []


def test_its_next_storage_change_brings_them_up() -> None:
    down = daemon_down(storage_pass(Told(), "v1").told, "1").told
    back = storage_pass(down, "v2")
    assert statuses(back) == ["up", "up"]
    assert back.told.daemon_down is False


def test_a_hold_freed_meanwhile_leaves_them_down() -> None:
    held = hold(storage_pass(Told(), "v1").told, "8", "1").told
    down = daemon_down(held, "1").told
    assert free(down, "8", "1").messages == []


def test_the_record_keeps_it_across_a_restart_of_the_pipeline() -> None:
    down = daemon_down(storage_pass(Told(), "v1").told, "1").told
    assert Told.from_json(down.to_json()) == down

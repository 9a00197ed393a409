"""Beat's ticks — the tasks it sends every few seconds whatever the jobs do (the deadline
sweep, the resync, the redelivery, the SystemStatus sync) — send no task events, so
Flower's task list shows the jobs' tasks instead of being scrolled by the sweeps; every
task a job's life runs still sends them."""

from __future__ import annotations

from pipeline.platform.app import TICK_S, create_app, ticks
from pipeline.settings import load_settings


def test_the_ticks_are_quiet_and_the_jobs_tasks_are_not() -> None:
    app = create_app(load_settings(env={}), set_current=False)
    quiet = {name for name, task in app.tasks.items() if not task.send_events}
    assert quiet == ticks(app.conf.beat_schedule)
    assert {"timeouts.sweep", "dws.resync", "housekeeping.redeliver"} <= quiet
    for name in ("dws.create", "dws.setup", "job.run", "job.cleanup", "housekeeping.ping"):
        assert app.tasks[name].send_events, name


def test_a_task_beat_sends_less_often_than_a_tick_is_not_one() -> None:
    schedule = {
        "fast": {"task": "a", "schedule": TICK_S},
        "slow": {"task": "b", "schedule": TICK_S + 1},
        "crontab": {"task": "c", "schedule": object()},
    }
    assert ticks(schedule) == {"a"}

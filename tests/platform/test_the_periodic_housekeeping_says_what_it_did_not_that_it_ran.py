"""An idle worker's journal is quiet: Celery's received and succeeded lines of the tasks
beat sends on a schedule are dropped (some 500,000 lines a day at ``-v`` otherwise),
while every other task's, and any failure, are kept."""

from __future__ import annotations

import logging

import pytest
from celery.app.trace import LOG_RECEIVED, LOG_SUCCESS

from pipeline.platform import quiet

TRACE = logging.getLogger("celery.app.trace")


#: the task id of the lines this test logs: a worker of another test in this process may
#: log its own tasks' lines meanwhile, which are not this test's to count
PROBE_ID = "quiet-probe"


def lines(caplog: pytest.LogCaptureFixture, name: str, level: int = logging.INFO) -> list[str]:
    caplog.clear()
    context = {"id": PROBE_ID, "name": name, "return_value": "0", "runtime": 0.001}
    context |= {"args": "()", "kwargs": "{}", "eta": None}
    for fmt in (LOG_RECEIVED, LOG_SUCCESS):
        TRACE.log(level, fmt, context)
    return [r.getMessage() for r in caplog.records if f"[{PROBE_ID}]" in r.getMessage()]


def test_the_scheduled_tasks_runs_are_not_logged_the_jobs_tasks_are(
    caplog: pytest.LogCaptureFixture,
) -> None:
    quiet.install()
    caplog.set_level(logging.INFO, logger="celery.app.trace")
    for periodic in ("dws.resync", "timeouts.sweep", "housekeeping.heartbeat"):
        assert periodic in quiet.PERIODIC
        assert lines(caplog, periodic) == [], periodic
    kept = lines(caplog, "job.run")
    assert len(kept) == 2 and "job.run" in kept[0] and "succeeded" in kept[1]


def test_a_periodic_tasks_warning_is_kept(caplog: pytest.LogCaptureFixture) -> None:
    quiet.install()
    caplog.set_level(logging.INFO, logger="celery.app.trace")
    assert len(lines(caplog, "dws.resync", logging.WARNING)) == 2


def test_installing_twice_adds_one_filter() -> None:
    quiet.install()
    quiet.install()
    assert sum(isinstance(f, quiet.QuietPeriodic) for f in TRACE.filters) == 1

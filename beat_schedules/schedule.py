"""The beat schedule: one entry per periodic duty, each saying why it exists.

Deadlines are data in Redis, so beat needs only a short
table of sweeps; run exactly one beat (``celery -A pipeline.app beat``).
"""

from __future__ import annotations

from typing import Any

SCHEDULE: dict[str, dict[str, Any]] = {
    # Every state timeout, TransientCondition tolerance, epilog timeout and
    # retry of the pipeline is a member of <prefix>:deadlines; this sweep
    # claims the due ones atomically and enqueues timeouts.fire for each.
    "deadline-sweep": {
        "task": "timeouts.sweep",
        "schedule": 1.0,
        "options": {"expires": 5.0},
    },
    # The watcher is edge-triggered; this level-triggered pass observes each
    # job whose latest Workflow event has gone unobserved for 10 s, so a lost
    # observe costs 10 s, not a job; jobs waiting on DWS or Flux cost nothing.
    "workflow-resync": {
        "task": "dws.resync",
        "schedule": 1.0,
        "options": {"expires": 1.0},
    },
    # Every task message we send is noted in <prefix>:ledger until its task
    # has an outcome; the broker loses one whose worker dies between taking
    # and recording it. This sends again each entry without an outcome after
    # pipeline.resend_after seconds (then ever more rarely).
    "task-redeliver": {
        "task": "housekeeping.redeliver",
        "schedule": 5.0,
        "options": {"expires": 5.0},
    },
}

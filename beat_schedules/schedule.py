"""The beat schedule: one entry per periodic duty, each saying why it exists.

Deadlines are data in Redis, so beat needs only a short table of sweeps.
Run two beats (``celery -A pipeline.app beat``) for failover: one holds the
beat lease and fires these, the other stands by (``pipeline.platform.beat``).
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
    # That pass reads only the jobs whose notes fell due; this one reads every
    # job's notes, for a due time a crash or an older version never wrote.
    "workflow-resync-full": {
        "task": "dws.resync",
        "schedule": 120.0,
        "kwargs": {"full": True},
        "options": {"expires": 120.0},
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
    # coral2_dws processes every Storage at start so that the ssds of Ready
    # rabbits come up; this applies the rabbit health rules to every Storage,
    # for a Flux that restarted and for a Storage event the watcher lost.
    # Nothing is sent for a rabbit whose health Flux already knows.
    "storage-resync": {
        "task": "storage.resync",
        "schedule": 30.0,
        "options": {"expires": 30.0},
    },
    # DWS's SystemStatus follows Flux: hosts offline in the resource journal or
    # drained by us for unmount failures are Disabled, Enabled again once
    # online (or undrained).
    "systemstatus-sync": {
        "task": "systemstatus.sync",
        "schedule": 2.0,
        "options": {"expires": 2.0},
    },
    # fluxjob-* Workflows whose job Flux no longer runs hold rabbit capacity
    # forever; this sends them to Teardown and deletes them, and compacts the
    # resource eventlog once it passes pipeline.resource_eventlog_compact_at.
    # Our multicast reservations at the fabric manager whose job is INACTIVE
    # or unknown are released here (a release that failed at CLEANUP, a
    # fabric manager that was down); a running job whose reservation
    # vanished fails. Nothing is asked when hwcoll.url is unset.
    "hwcoll-reconcile": {
        "task": "hwcoll.reconcile",
        "schedule": 30.0,
        "options": {"expires": 30.0},
    },
    "stale-sweep": {
        "task": "housekeeping.stale_sweep",
        "schedule": 60.0,
        "options": {"expires": 60.0},
    },
}


#: How often beat sends each queue a ``housekeeping.heartbeat`` (s).
HEARTBEAT_S = 10.0


def heartbeats(queues: list[str]) -> dict[str, dict[str, Any]]:
    """One entry per queue: a heartbeat a worker of that queue notes when it takes it, so
    that ``coral2-pipeline status`` can flag a queue no worker serves."""
    return {
        f"heartbeat-{queue}": {
            "task": "housekeeping.heartbeat",
            "schedule": HEARTBEAT_S,
            "kwargs": {"queue": queue},
            "options": {"queue": queue, "expires": HEARTBEAT_S},
        }
        for queue in queues
    }

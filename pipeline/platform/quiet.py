"""A quiet journal: the periodic housekeeping says what it did, not that it ran.

Beat sends its periodic tasks several times a second between them; at the units' ``-v``
Celery logs two INFO lines for each (received, succeeded), some 500,000 lines a day on
an idle machine. Those two lines are dropped for the tasks of the beat schedule; what
such a task does is logged by the task itself (a resync that enqueues observes, a
deadline fired, a Workflow swept), and its failures are logged as every task's are.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from beat_schedules.schedule import SCHEDULE

#: The tasks beat sends on a schedule.
PERIODIC = frozenset(str(entry["task"]) for entry in SCHEDULE.values()) | {"housekeeping.heartbeat"}
#: Celery's loggers of a task's received and succeeded lines.
LOGGERS = ("celery.app.trace", "celery.worker.strategy")


class QuietPeriodic(logging.Filter):
    """Drops Celery's INFO received/succeeded lines of the periodic tasks."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or not isinstance(record.args, Mapping):
            return True
        return record.args.get("name") not in PERIODIC


def install() -> None:
    """Put the filter on Celery's loggers (once)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, QuietPeriodic) for f in logger.filters):
            logger.addFilter(QuietPeriodic())

"""Beat with a leader lease: run two or more, one sends the periodic tasks.

``celery_config`` names :class:`LeaderScheduler` as ``beat_scheduler``. It is
Celery's persistent scheduler that fires its entries only while its process
holds the beat lease in Redis (``<prefix>:beat:leader``,
:class:`pipeline.store.lease.Lease`); the others wait, trying for the lease
about three times a lease. A beat that dies or is frozen (SIGSTOP) loses the
lease after ``pipeline.beat_lease`` seconds and a standby takes over. A
frozen one that wakes up finds the lease gone and fires nothing. The leader
notes each tick (``<prefix>:beat:tick``: time and holder), and
``coral2-pipeline status`` flags a beat that has not ticked.

Two beats may both fire an entry in the instant the lease changes hands:
every periodic task is idempotent, so that costs one duplicate.

Celery's schedules count from each entry's last run in wall time: after the
clock steps back, an entry last run "in the future" would not be due again
until the clock caught up (an hour's step: no deadline swept for an hour).
Each tick therefore brings such runs back to now (:func:`forget_future_runs`)
and has Celery rebuild its heap of due times, which are from before the step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from contextlib import suppress
from datetime import datetime
from typing import Any

from celery.beat import PersistentScheduler

from pipeline.errors import PipelineError, StoreUnavailable
from pipeline.platform.sending import settings_of
from pipeline.platform.systemd import notify, watchdog_interval
from pipeline.store import Store
from pipeline.store.lease import Lease, identity

log = logging.getLogger("coral2_pipeline.beat")


def forget_future_runs(entries: Iterable[Any], now: datetime) -> list[str]:
    """Set the last run of every entry that ran after ``now`` (the clock stepped back)
    to ``now``; return their names."""
    moved = []
    for entry in entries:
        last = entry.last_run_at
        if last is not None and last > now:
            entry.last_run_at = now
            moved.append(entry.name)
    return moved


class LeaderScheduler(PersistentScheduler):  # type: ignore[misc]
    """Celery's persistent scheduler, firing only while it holds the beat lease."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        settings = settings_of(self.app)
        self.store = Store.from_url(settings.store_url, settings.pipeline.key_prefix)
        self.lease = Lease(self.store.client, self.store.keys.beat_leader)
        self.lease_s = settings.pipeline.beat_lease
        self.holder = identity()
        self.leading = False
        self.watchdog = watchdog_interval() is not None

    def _lead(self) -> bool:
        try:
            leading = self.lease.hold(self.holder, self.lease_s)
            if leading:
                self.lease.note(self.store.keys.beat_tick, f"{time.time():.3f} {self.holder}")
        except (PipelineError, OSError) as exc:  # Redis down or refusing: never the process
            log.warning("beat: cannot reach Redis for the lease: %s", exc)
            leading = False
        if leading != self.leading:
            log.warning("beat %s %s", self.holder, "leads" if leading else "stands by")
            self.leading = leading
        return leading

    def tick(self, *args: Any, **kwargs: Any) -> float:
        wait = self.lease_s / 3
        if self.watchdog:  # each tick, leading or standing by: the loop turns
            notify("WATCHDOG=1")
        if not self._lead():
            return wait
        moved = forget_future_runs(self.schedule.values(), self.app.now())
        if moved:
            log.warning("beat: the clock stepped back; %s count from now", ", ".join(moved))
            self._heap = None  # its times are from before the step: rebuilt on this tick
        return float(min(super().tick(*args, **kwargs), wait))

    def close(self) -> None:
        if self.leading:
            with suppress(StoreUnavailable):  # it expires by itself
                self.lease.resign(self.holder)
        super().close()

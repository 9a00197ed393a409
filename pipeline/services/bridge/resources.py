"""Flux's resource journal, mirrored into the pipeline's resource eventlog.

The bridge streams flux-core's ``resource.journal`` (RFC 44): the history in
batches, a sentinel (an empty ``events`` array), then live events. Each
event goes into the store's eventlog (:class:`~pipeline.store.resource_log.ResourceLog`)
for the SystemStatus sync, the rabbit health's Flux incarnation (its
``restart``) and ``coral2-pipeline resource``.

A restarted bridge is sent the whole history again: events no newer than
the newest already mirrored are skipped until the sentinel; after it,
everything is new.

flux-core 0.88 keeps at most ``[resource] journal-max`` events (100,000) and
heads a journal that dropped its oldest with a ``truncate`` event, stamped
with the last event dropped. One no newer than what is mirrored lost nothing
here, and is skipped like any old event; a newer one means events were never
mirrored (the bridge was away, or this is a first start on a long-running
instance). It is mirrored then, with the instance's nodelist (the broker's
``hostlist``), since the ``restart`` event that names it may be among the
dropped: the SystemStatus sync takes its ranks' hostnames from it.

An event the store cannot take yet (Redis down) waits and is posted, in
order, by the next :meth:`ResourceMirror.flush`; an event that breaks RFC 44
is logged and skipped (Flux wrote it; nothing here can mend it).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.errors import InputError, PipelineError
from pipeline.store.resource_log import ResourceLog

log = logging.getLogger("coral2_pipeline.bridge")


@dataclass
class ResourceMirror:
    """Feed it journal responses; it posts what is new."""

    eventlog: ResourceLog
    hostlist: str | None = None  # the instance's nodelist, noted in a truncate mirrored
    newest: float | None = None  # the newest mirrored timestamp (read at the first feed)
    live: bool = False
    pending: deque[tuple[dict[str, Any], dict[str, Any] | None]] = field(default_factory=deque)

    def feed(self, response: Mapping[str, Any]) -> None:
        """Take one journal response (``{"events": [...], "R"?: {...}}``)."""
        events = response.get("events")
        if not isinstance(events, list):
            log.warning("resource journal: a response without events ignored: %r", response)
            return
        if not events:
            self.live = True  # the sentinel: all that follows is new
            return
        r = response.get("R")
        for event in events:
            if not isinstance(event, dict):
                continue
            self.pending.append((event, r if event.get("name") == "resource-define" else None))
        self.flush()

    def _gap(self, event: dict[str, Any]) -> dict[str, Any]:
        """A truncate newer than what is mirrored: say so, and note the nodelist in it."""
        log.warning(
            "resource journal: Flux dropped its events up to %s (resource.journal-max); "
            "those after %s were never mirrored here: drains and undrains among them are "
            "known only by Flux (flux resource drain shows them)",
            event.get("timestamp"),
            self.newest or "the first",
        )
        if not self.hostlist:
            return event
        context = dict(event.get("context") or {}, nodelist=self.hostlist)
        return {**event, "context": context}

    def flush(self) -> int:
        """Post what waits, in order; return how many still wait (Redis down)."""
        while self.pending:
            event, r = self.pending[0]
            try:
                if self.newest is None:
                    self.newest = self.eventlog.last_timestamp()
                stamp = event.get("timestamp")
                old = not self.live and isinstance(stamp, int | float) and stamp <= self.newest
                if not old and event.get("name") == "truncate":
                    event = self._gap(event)
                if not old:
                    self.eventlog.post(event, r=r)
                    if isinstance(stamp, int | float):
                        self.newest = max(self.newest, float(stamp))
            except InputError as exc:
                log.error("resource journal: %s; skipped", exc)
            except PipelineError as exc:
                log.warning("resource journal: not mirrored yet: %s", exc)
                break
            self.pending.popleft()
        return len(self.pending)

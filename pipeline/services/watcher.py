"""The watcher: Kubernetes watches on Workflows and Storages → ``observe`` tasks.

``coral2-pipeline watch`` runs it. Several replicas may run; one leads,
holding a Redis lock (owner token, short expiry) that it renews; a standby
takes over within ``lease_s`` of the leader's death. The leader:

* resumes each watch from the last resourceVersion it processed (kept in
  Redis, so a restart resumes too), relists on 410 Gone, and backs off
  (capped) while the API server is unreachable. An event's resourceVersion
  is saved with the next event's first write, once the event is fully
  handled, or when the watch round ends: a watcher killed at any moment
  handles at most one event again (a duplicate observe, coalesced), never
  skips one;
* notes each ``fluxjob-*`` Workflow's latest resourceVersion (what
  ``dws.resync`` compares with the one its last observe read) and
  enqueues ``dws.observe``, coalesced with a
  ``SET NX`` mark so at most one observe per job is pending (a send that
  fails clears the mark, so the retried event sends it), and warns once
  per name about Workflows that are not Flux's. Events that cannot change
  a decision are passed over (:func:`awaits_dws`): DWS has not yet taken up
  a new ``desiredState``, so its own status update follows;
* enqueues ``storage.observe`` for Storage changes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kombu.exceptions import OperationalError

from pipeline.clients.k8s import DwsClient
from pipeline.clients.kube import WatchEvent
from pipeline.clients.lease import LeaseMirror
from pipeline.errors import Gone, KubeError, StoreUnavailable
from pipeline.model.workflow import jobid_of_workflow as jobid_of
from pipeline.states.hooks import name_of
from pipeline.states.rabbits import health_view
from pipeline.store import Checkpoint, Store
from pipeline.store.jobs import parse_notes
from pipeline.store.lease import identity as holder_name
from pipeline.tasks.observe import seen_entry

log = logging.getLogger("coral2_pipeline.watch")

Enqueue = Callable[[str, dict[str, object]], None]
#: Handles one listed or watched object; the flag says whether it calls for an observe.
#: The checkpoint, if any, is the previous event's resume point, saved with the handler's
#: first write: one round trip per event instead of two.
Handler = Callable[[dict[str, Any], bool, Checkpoint | None], None]

#: How often a watch's resume point is saved while events stream (s): a watcher that
#: takes over resumes at most this far back, and handles those events again (observes
#: are idempotent), for one write a second instead of one an event.
CHECKPOINT_S = 1.0

#: Statuses that call for an observe whatever state they are reported in.
_ALARMS = frozenset({"Error", "TransientCondition"})


def awaits_dws(event: WatchEvent) -> bool:
    """Whether a Workflow event only shows DWS still to take up a new ``desiredState``.

    Such an event — nearly always our own desiredState patch — reports the
    previous state: that state's actions are done (we patched because it was
    complete), ``Teardown`` is not yet active, and DWS's next status update,
    which reports the new state, is certain to follow and is observed. One
    observe fewer per transition, with nothing decided later: alarms
    (``Error``, ``TransientCondition``), deletions and Workflows with no
    status yet are always observed, and ``dws.resync`` re-observes anyway.
    """
    if event.type != "MODIFIED":
        return False
    obj = event.object
    status = obj.get("status") or {}
    state, desired = status.get("state"), (obj.get("spec") or {}).get("desiredState")
    return (
        bool(state)
        and bool(desired)
        and state != desired
        and status.get("status") not in _ALARMS
        and not obj.get("metadata", {}).get("deletionTimestamp")
    )


#: The least time without an answer from Redis after which the watcher is not healthy (s).
REACH_S = 10.0
#: How often the leader rewrites the Lease that mirrors its leadership (s), as often as
#: Kubernetes' own leader election renews; a new leader writes it at once.
MIRROR_S = 10.0


@dataclass
class Watcher:
    """One watcher replica."""

    store: Store
    dws: DwsClient
    enqueue: Enqueue
    lease_s: float = 3.0
    watch_timeout_s: int = 30
    identity: str = field(default_factory=holder_name)  # host:pid:token
    #: the coordination.k8s.io Lease that shows this replica's leadership (None: none)
    mirror: LeaseMirror | None = None
    _warned: set[str] = field(default_factory=set)
    #: each rabbit's :func:`health_view` as this replica last had it observed
    _storages: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _leading: threading.Event = field(default_factory=threading.Event)
    _turned: float = field(default_factory=time.monotonic)  # the lease loop's last turn
    _answered: float = -float("inf")  # when Redis last answered the lease loop
    _outage: str | None = None  # why Redis does not answer, while it does not
    #: set once Redis has answered: the watcher can do its work (systemd's READY)
    reached: threading.Event = field(default_factory=threading.Event)
    #: the store's generation each watch last ran in (:meth:`Store.generation`)
    _generations: dict[str, str] = field(default_factory=dict)

    # --- leadership -------------------------------------------------------------
    def try_lead(self) -> bool:
        """Take or keep the leader lock; return whether this replica leads."""
        leading = self.store.watch.lead(self.identity, self.lease_s)
        if leading and not self.leading:
            log.info("watcher %s is now the leader", self.identity)
        return leading

    def resign(self) -> None:
        """Give up leadership at once (clean shutdown)."""
        self.store.watch.resign(self.identity)

    def stop(self) -> None:
        """Ask the run loop to end."""
        self._stop.set()

    # --- events -------------------------------------------------------------------
    def _save(self, checkpoint: Checkpoint | None) -> None:
        if checkpoint is not None:
            self.store.watch.save(checkpoint)

    def _workflow(self, obj: dict[str, Any], wanted: bool, checkpoint: Checkpoint | None) -> None:
        """Note the job's latest resourceVersion; enqueue an observe if ``wanted``."""
        name = obj["metadata"]["name"]
        jobid = jobid_of(name)
        if jobid is None:
            self._save(checkpoint)
            if name not in self._warned:
                self._warned.add(name)
                log.warning("ignoring Workflow %s: not created by Flux (fluxjob-<jobid>)", name)
            return
        watch = self.store.watch
        now = time.time()
        if watch.note_workflow(
            jobid, seen_entry(obj, now), now, wanted=wanted, checkpoint=checkpoint
        ):
            try:  # the mark was set: no observe was pending
                self.enqueue("dws.observe", {"jobid": jobid})
            except BaseException:  # not sent: the mark must not hold back the next try
                with suppress(StoreUnavailable):
                    watch.unmark(jobid)
                raise

    def _storage(self, obj: dict[str, Any], wanted: bool, checkpoint: Checkpoint | None) -> None:
        self._save(checkpoint)
        if not wanted:
            return
        name = obj["metadata"]["name"]
        self.enqueue("storage.observe", {"name": name})
        self._storages[name] = health_view(obj)  # sent: the same view asks for no other

    def _wanted(self, plural: str, event: WatchEvent) -> bool:
        """Whether ``event`` calls for an observe: not a Workflow's that only shows DWS
        still to take up a new state, nor a Storage change that only moved its free space
        (nnf-sos updates it with every allocation; ``storage.resync`` still applies the
        health rules to every Storage every 30 s)."""
        if plural == "workflows":
            return not awaits_dws(event)
        if event.type != "MODIFIED":
            return True
        name = (event.object.get("metadata") or {}).get("name")
        return self._storages.get(str(name)) != health_view(event.object)

    def _sync(self, plural: str, handle: Handler) -> str:
        """List ``plural``, handle every object, return the list's resourceVersion.

        A Workflow deleted while no watch ran (its DELETED event lost with the watch, the
        API server's watch cache started afresh) is not in the list: every job whose
        events the watcher noted and whose Workflow the list lacks is handled as gone, as
        an informer's relist hands its handlers the objects it no longer finds."""
        items, rv = self.dws.list_objects(plural)
        for item in items:
            handle(item, True, None)
        if plural == "workflows":
            listed = {jobid_of(str(item["metadata"]["name"])) for item in items}
            for jobid in sorted(set(parse_notes(self.store.watch.seen())) - listed):
                gone = {"metadata": {"name": name_of(jobid), "resourceVersion": rv}}
                handle(gone, True, None)
        return rv

    def pump(self, plural: str, handle: Handler, *, timeout_s: int) -> None:
        """Run one watch round for ``plural``: resume, relist if needed, handle events. A
        store whose generation changed (Redis restarted or lost its data: its records may
        be older than DWS) lists every object again, each one observed."""
        watch = self.store.watch
        generation = self.store.generation()
        before = self._generations.get(plural)
        if generation is not None:
            self._generations[plural] = generation
            if before is not None and before != generation:
                log.warning("%s: Redis restarted or lost its data; listing again", plural)
                watch.forget(plural)
        rv = watch.resume_from(plural)
        handled: Checkpoint | None = None  # the last event handled, not yet saved
        saved = time.monotonic()
        try:
            if not rv:
                rv = self._sync(plural, handle)
                watch.save(watch.checkpoint(plural, rv))
            for event in self.dws.watch(plural, rv, timeout_s=timeout_s):
                if self._stop.is_set() or not self.leading:
                    break
                wanted = self._wanted(plural, event)
                checkpoint = None
                if handled is not None and time.monotonic() - saved >= CHECKPOINT_S:
                    checkpoint, handled, saved = handled, None, time.monotonic()
                handle(event.object, wanted, checkpoint)
                handled = watch.checkpoint(plural, event.resource_version)
        except Gone:
            log.info("%s watch expired at resourceVersion %s; relisting", plural, rv)
            handled = None  # relist: nothing to resume from
            watch.forget(plural)
        finally:  # the round ends (or fails): keep what was handled
            self._save(handled)

    # --- main loop -------------------------------------------------------------------
    def turning(self) -> bool:
        """Whether the lease loop turned within three of its periods (a lease loop stuck
        on Redis, or dead, no longer does)."""
        return time.monotonic() - self._turned < self.lease_s

    def reachable(self) -> bool:
        """Whether Redis answered the lease loop lately (within three leases, 10 s at least):
        a watcher that cannot reach it watches nothing."""
        return time.monotonic() - self._answered < max(3 * self.lease_s, REACH_S)

    def healthy(self) -> bool:
        """The systemd watchdog's check: the lease loop turns and Redis answers it, so the
        watcher does its work (or stands by, ready to)."""
        return self.turning() and self.reachable()

    @property
    def outage(self) -> str | None:
        """Why Redis does not answer, while it does not (None: it does)."""
        return self._outage

    @property
    def leading(self) -> bool:
        """Whether this replica held the lock at its last renewal."""
        return self._leading.is_set()

    def run(self) -> None:
        """Lead when possible and pump both watches until :meth:`stop`; then resign."""
        threads = [
            threading.Thread(target=self._renew_loop, name="watch-lease", daemon=True),
            threading.Thread(target=self._mirror_loop, name="watch-lease-mirror", daemon=True),
            threading.Thread(
                target=self._pump_loop,
                args=("workflows", self._workflow),
                name="watch-workflows",
                daemon=True,
            ),
            threading.Thread(
                target=self._pump_loop,
                args=("storages", self._storage),
                name="watch-storages",
                daemon=True,
            ),
        ]
        for thread in threads:
            thread.start()
        self._stop.wait()
        for thread in threads:
            thread.join(timeout=self.lease_s)
        self._leading.clear()
        try:
            self.resign()
        except StoreUnavailable as exc:  # the lease expires by itself
            log.warning(
                "watcher: could not resign (%s); the lease expires in %.1fs", exc, self.lease_s
            )

    def _renew_loop(self) -> None:
        while not self._stop.is_set():
            self._turned = time.monotonic()
            try:
                leads = self.try_lead()
            except StoreUnavailable as exc:  # not leading until renewed
                if self._outage is None:  # said once an outage, leader or not
                    log.warning("watcher: Redis does not answer (%s): watching nothing", exc)
                self._outage = str(exc)
                self._leading.clear()
            else:
                self._answered = time.monotonic()
                if self._outage is not None:
                    log.warning("watcher: Redis answers again")
                self._outage = None
                self.reached.set()
                if leads:
                    self._leading.set()
                else:
                    self._leading.clear()
            self._stop.wait(self.lease_s / 3)

    def _mirror_loop(self) -> None:
        """Show this replica's leadership in the Lease while it leads: at once when it
        takes over, then every :data:`MIRROR_S`. The API server's answers never touch the
        Redis lease (a slow or refusing API server costs no leadership); a failure is
        said once until a write succeeds again; a clean stop says nobody leads."""
        if self.mirror is None:
            return
        shown = -float("inf")  # when this replica last wrote the Lease, while leading
        failing: str | None = None
        duration = int(MIRROR_S + self.lease_s) + 1
        while not self._stop.is_set():
            if not self.leading:
                shown = -float("inf")
            elif time.monotonic() - shown >= MIRROR_S:
                try:
                    self.mirror.show(self.identity, duration, datetime.now(UTC))
                except KubeError as exc:
                    if failing != str(exc):
                        log.warning("watcher: cannot write the Lease %s: %s", self.mirror.name, exc)
                    failing = str(exc)
                else:
                    shown, failing = time.monotonic(), None
            self._stop.wait(self.lease_s / 3)
        if shown > -float("inf"):
            with suppress(KubeError):
                self.mirror.release(self.identity, datetime.now(UTC))

    def _pump_loop(self, plural: str, handle: Handler) -> None:
        backoff = 0.1
        while not self._stop.is_set():
            if not self.leading:
                self._stop.wait(0.1)
                continue
            try:
                self.pump(plural, handle, timeout_s=self.watch_timeout_s)
                backoff = 0.1
            except (KubeError, StoreUnavailable, OperationalError) as exc:
                log.warning("watcher (%s): %s; retrying in %.1fs", plural, exc, backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)

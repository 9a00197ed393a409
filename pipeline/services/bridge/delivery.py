"""Deliver outbox messages to Flux exactly as flux-coral2 sends them.

Every message kind maps to one Flux request:

======================  ============================================================
kind                    Flux request
======================  ============================================================
resource-update         RPC ``job-manager.dws.resource-update``
prolog-remove           RPC ``job-manager.dws.prolog-remove``
epilog-remove           RPC ``job-manager.dws.epilog-remove``
memo                    RPC ``job-manager.memo``
exception               RPC ``job-manager.raise`` (what ``flux.job.raise`` sends)
drain / undrain         RPC ``resource.drain`` / ``resource.undrain`` to rank 0
set-property            RPC ``sched-fluxion-resource.set_property`` (bulk form)
remove-property         RPC ``sched-fluxion-resource.remove_property`` (bulk form)
set-status              RPC ``sched-fluxion-resource.set_status``
event-post              RPC ``job-manager.post-event.post`` (flux-core's ``.post-event``)
kvs-put                 a put in the job's KVS directory, committed
======================  ============================================================

An error *answer* from Flux is logged and the message acknowledged, as
coral2_dws only logs responses; an entry that cannot be read, or of which no
Flux request can be made (an unknown kind, a payload missing a field), is
set aside as a dead letter and delivery goes on with the next; a failure to *reach* Flux
(:class:`FluxUnreachable`) leaves the message unacknowledged so it is
delivered again — which is safe, since every message is idempotent on the
Flux side or guarded by a once-mark when it was written.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipeline.errors import FluxError, FluxUnreachable, InputError, StoreUnavailable
from pipeline.model.eventlog import EventlogEntry
from pipeline.model.hostlist import expand_hostlist
from pipeline.platform.deadletters import set_aside
from pipeline.services.bridge.recovery import already_taken, leaves_a_mark
from pipeline.store.metrics import Metrics
from pipeline.store.outbox import Delivery, Outbox, OutboxMessage
from pipeline.store.timeline import Timeline

log = logging.getLogger("coral2_pipeline.bridge")


class FluxEndpoint(Protocol):
    """What the bridge needs from Flux: RPCs, job KVS puts, and a job's eventlog."""

    def rpc(self, topic: str, payload: dict[str, Any], nodeid: int = 0) -> dict[str, Any]:
        """Send one RPC; return the answer, raise FluxError on an error answer."""

    def kvs_put(self, jobid: int, key: str, value: Any) -> None:
        """Put ``key`` in the job's KVS directory and commit."""

    def eventlog(self, jobid: int) -> list[EventlogEntry]:
        """The job's eventlog as it stands; FluxError when Flux has no such job."""

    def kvs_get(self, jobid: int, key: str) -> tuple[bool, Any]:
        """(whether the job's KVS directory holds ``key``, its value)."""


PathOf = Callable[[str], str]

RPC_TOPICS = {
    "resource-update": "job-manager.dws.resource-update",
    "prolog-remove": "job-manager.dws.prolog-remove",
    "epilog-remove": "job-manager.dws.epilog-remove",
    "memo": "job-manager.memo",
    "exception": "job-manager.raise",
    "drain": "resource.drain",
    "undrain": "resource.undrain",
    "set-property": "sched-fluxion-resource.set_property",
    "remove-property": "sched-fluxion-resource.remove_property",
    "set-status": "sched-fluxion-resource.set_status",
    "event-post": "job-manager.post-event.post",
}


def _paths(targets: str, path_of: PathOf) -> list[str]:
    return [path_of(host) for host in expand_hostlist(targets)]


def translate(message: OutboxMessage, path_of: PathOf) -> tuple[str, dict[str, Any]]:
    """Return the RPC ``(topic, payload)`` flux-coral2 sends for ``message``.

    ``path_of`` maps a hostname to its Fluxion containment path (for the
    property RPCs). ``kvs-put`` is not an RPC and is refused here.
    """
    p = message.payload
    kind = message.kind
    if kind == "kvs-put":
        raise ValueError("kvs-put is a KVS transaction, not an RPC")
    topic = RPC_TOPICS[kind]
    if kind == "set-property":
        return topic, {
            "sp_resource_path": _paths(p["targets"], path_of),
            "sp_keyval": f"{p['key']}={p['value']}",
        }
    if kind == "remove-property":
        return topic, {"resource_path": _paths(p["targets"], path_of), "key": p["key"]}
    if kind == "undrain":
        # "update": no error for a target that is not drained (flux-core ≥ 0.81 refuses
        # the "force" earlier releases took)
        return topic, {"targets": p["targets"], "mode": p.get("mode", "update")}
    return topic, dict(p)


@dataclass
class Deliverer:
    """Read the outbox as one consumer and deliver each message to ``flux``."""

    outbox: Outbox
    flux: FluxEndpoint
    consumer: str
    path_of: PathOf
    #: entries delivered whose acknowledgement Redis did not take (it was down): they
    #: are acknowledged before anything is read again, and so never delivered twice
    owed_acks: set[str] = field(default_factory=set)
    #: how long an entry read and never acknowledged (its bridge died) waits before it
    #: is reclaimed
    reclaim_idle_s: float = 30.0

    def deliver(
        self, message: OutboxMessage, *, reclaimed: bool = False, entry_id: str = ""
    ) -> None:
        """Deliver one message; an error answer is logged (raise FluxUnreachable to retry),
        and for a request of no job (a drain, an undrain, a property: an operator's or the
        health rules') set aside as a dead letter too, where ``coral2-pipeline status``
        and the command that sent it see Flux's refusal; a job's request Flux refuses is
        one that came too late for its job, as coral2_dws's would. A message no Flux
        request can be made of is set aside. A ``reclaimed`` message
        (read before, never acknowledged: a bridge died with it) whose mark its job's
        eventlog already shows is not delivered again (:mod:`.recovery`)."""
        if reclaimed and self._taken(message):
            log.info("%s for job %s: Flux took it already", message.kind, message.jobid)
            return
        try:
            if message.kind == "kvs-put":
                if message.jobid is None:
                    raise ValueError("a kvs-put names no job")
                put = (message.jobid, str(message.payload["key"]), message.payload["value"])
            else:
                topic, payload = translate(message, self.path_of)
        except (KeyError, TypeError, ValueError, InputError) as exc:
            fields = {"kind": message.kind, "jobid": message.jobid, "payload": message.payload}
            problem = f"cannot make a Flux request of it: {type(exc).__name__}: {exc}"
            self.set_aside(entry_id, json.dumps(fields), problem)
            return
        try:
            if message.kind == "kvs-put":
                self.flux.kvs_put(*put)
                log.debug("job %s: kvs-put %s", message.jobid, put[1])
            else:
                self.flux.rpc(topic, payload)
                log.debug("job %s: %s %s", message.jobid, topic, json.dumps(payload))
        except FluxError as exc:
            log.warning("%s for job %s: Flux answered: %s", message.kind, message.jobid, exc)
            self._refused(message, str(exc))
            if message.jobid is None:
                fields = {"kind": message.kind, "payload": message.payload}
                self.set_aside(entry_id, json.dumps(fields), f"Flux refused it: {exc}")

    def _refused(self, message: OutboxMessage, why: str) -> None:
        """Keep Flux's refusal where an admin looks: the job's timeline (``job show``),
        and a count by kind (``coral2_flux_refusals_total``; ``status`` flags new ones)."""
        metrics = Metrics(self.outbox.client, self.outbox.keys)
        try:
            metrics.count_refusal(message.kind)
            if message.jobid is not None:
                timeline = Timeline(self.outbox.client, self.outbox.keys)
                timeline.note(message.jobid, "flux", f"Flux refused {message.kind}: {why}")
        except StoreUnavailable as exc:  # the delivery's outcome stands; the note is lost
            log.warning("noting Flux's refusal of %s: %s", message.kind, exc)

    def _taken(self, message: OutboxMessage) -> bool:
        if message.kind == "kvs-put" and message.jobid is not None:
            # its mark is the key itself: a put whose value the job's KVS holds is done
            try:
                found, value = self.flux.kvs_get(message.jobid, str(message.payload["key"]))
            except (FluxError, KeyError, TypeError):
                return False
            return found and value == message.payload.get("value")
        if not leaves_a_mark(message):
            return False
        assert message.jobid is not None
        try:
            return already_taken(message, self.flux.eventlog(message.jobid))
        except FluxError:  # no such job: delivered, Flux answers as it would have
            return False

    def set_aside(self, entry_id: str, raw: str, problem: str) -> None:
        """An entry no Flux request can be made of: a dead letter, and delivery goes on."""
        where = f"outbox {entry_id}".strip()
        set_aside(self.outbox.client, self.outbox.keys.prefix, where, raw, problem)

    def run_once(self, *, count: int = 100, block_ms: int | None = None) -> int:
        """Deliver up to ``count`` messages in order; return how many were delivered.

        The delivered ones are acknowledged together, in one round trip, once
        the batch ends — also when it ends early, at Flux unreachable or an
        error. A crash before that acknowledgement delivers them again, as a
        crash between a delivery and its own acknowledgement always could:
        every message is safe to deliver twice (module docstring). An
        acknowledgement Redis cannot take (it is down) is owed, and paid before the
        next read: the entries it covers are never read, so never delivered, again.
        """
        if self.owed_acks:
            self.outbox.ack(*sorted(self.owed_acks))  # StoreUnavailable: owed still
            self.owed_acks.clear()
        delivered: list[str] = []
        deliveries: list[Delivery] = self.outbox.read(
            self.consumer, count=count, block_ms=block_ms, reclaim_idle_s=self.reclaim_idle_s
        )
        try:
            for delivery in deliveries:
                if delivery.message is None:
                    self.set_aside(delivery.entry_id, delivery.raw, delivery.problem)
                    delivered.append(delivery.entry_id)
                    continue
                try:
                    self.deliver(
                        delivery.message,
                        reclaimed=delivery.attempt > 1,
                        entry_id=delivery.entry_id,
                    )
                except FluxUnreachable as exc:
                    log.warning(
                        "Flux unreachable, %s stays in the outbox: %s", delivery.entry_id, exc
                    )
                    break
                delivered.append(delivery.entry_id)
        finally:
            try:
                self.outbox.ack(*delivered)
            except StoreUnavailable:
                self.owed_acks.update(delivered)
                raise
        return len(delivered)

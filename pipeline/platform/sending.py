"""The sending side of the platform: every task message leaves through here.

* **No lost messages.** :func:`dispatch` notes every message in the store's ledger before
  sending it; a task crosses its entry out when it ends, and ``housekeeping.redeliver``
  sends again the entries left without an outcome (``pipeline/store/ledger.py`` says which
  broker window loses them).
* **A job's node tasks as one manifest.** :func:`dispatch_nodes` sends the copies of one
  task to many nodes as one signed manifest (:mod:`pipeline.platform.fanout`), noted in
  the ledger a thousand a round trip and pushed in pipelined batches.
* **Monitors see arguments cheaply.** :func:`reprs` names a message's arguments for
  Flower and ``celery inspect`` without Celery's pure-Python ``saferepr``.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from functools import cache
from typing import Any

from celery import Celery
from celery.app.amqp import AMQP
from kombu.exceptions import OperationalError

from pipeline.errors import PermanentError, StoreUnavailable
from pipeline.platform import fanout, nodework
from pipeline.platform.routing import SENT_BY_NAME, node_queue
from pipeline.platform.sealing import seal_from
from pipeline.settings import Settings
from pipeline.store import Store, backlog

log = logging.getLogger("coral2_pipeline.tasks")

__all__ = [
    "FLUX_REQUESTS",
    "dispatch",
    "dispatch_node",
    "dispatch_nodes",
    "publish",
    "reprs",
    "resend_copies",
    "send",
    "settings_of",
    "store_of",
]


@cache
def _store(url: str, prefix: str, key: str | None, cert_store: str | None) -> Store:
    return Store.from_url(url, prefix, seal_from(key, cert_store))


def settings_of(app: Celery) -> Settings:
    """The settings ``app`` was built from (``pipeline.platform.config``)."""
    settings: Settings = app.conf.coral2_settings
    return settings


def store_of(app: Celery) -> Store:
    """The Redis store of ``app``'s settings (one client per process)."""
    settings = settings_of(app)
    p = settings.pipeline
    return _store(settings.store_url, p.key_prefix, p.security_key, p.security_cert_store)


#: The tasks that serve a request of Flux's, and how the job's timeline names it.
FLUX_REQUESTS = {
    "dws.create": "dws.create: a #DW job submitted",
    "dws.setup": "dws.setup: the job allocated, Setup asked",
    "dws.post_run": "dws.post_run: the job's tasks ended, PostRun asked",
    "dws.teardown": "dws.teardown: the job's epilog, Teardown asked",
    "dws.abort": "dws.abort: Flux gave the epilog up",
    "dws.epilog_lost": "dws-jobtap gave the epilog up: nothing served dws.post_run",
    "job.run": "the job entered RUN (alloc)",
    "job.cleanup": "the job entered CLEANUP",
    "job.restore": "Flux runs the job with VNIs the store lost: held again",
}


def dispatch(
    app: Celery, store: Store, name: str, kwargs: dict[str, Any], *, queue: str | None = None
) -> str:
    """Send task ``name`` with ``kwargs`` through its own ``apply_async``; return the task id.

    The message is noted in the ledger first, so a message the broker loses
    is sent again (``housekeeping.redeliver``). Should the send itself fail,
    the entry is crossed out and the error raised: the caller knows nothing
    was sent, and nothing is sent behind its back later.
    """
    task_id = str(uuid.uuid4())
    if name in FLUX_REQUESTS and isinstance(kwargs.get("jobid"), int):
        store.timeline.note(kwargs["jobid"], "flux", FLUX_REQUESTS[name])
    resend_after_s = settings_of(app).pipeline.resend_after
    now = time.time()
    store.ledger.note(task_id, name, kwargs, now=now, resend_after_s=resend_after_s, queue=queue)
    try:
        send(app, name, kwargs, task_id, queue, first_sent=now)
    except BaseException as failed:
        try:
            store.ledger.done(task_id)
        except StoreUnavailable as exc:  # it will be sent later: tasks are idempotent
            log.warning("sending %s failed, and so did crossing it out: %s", name, exc)
        if isinstance(failed, OperationalError):  # the broker is down: a store outage
            raise StoreUnavailable(f"sending {name}: the broker: {failed}") from failed
        raise
    return task_id


def send(
    app: Celery,
    name: str,
    kwargs: dict[str, Any],
    task_id: str,
    queue: str | None,
    producer: Any = None,
    *,
    first_sent: float,
    resent: bool = False,
) -> None:
    """Send one message: through the registered task's own ``apply_async`` (its queue and
    options), or by name for a node task, which only the node workers register.
    ``first_sent``: when its ledger entry was first sent (:data:`backlog.SENT_HEADER`);
    ``resent``: the ledger sends it again (:data:`backlog.RESENT_HEADER`)."""
    options: dict[str, Any] = {"queue": queue} if queue else {}
    options["headers"] = {backlog.SENT_HEADER: first_sent}
    if resent:
        options["headers"][backlog.RESENT_HEADER] = True
    if producer is not None:
        options["producer"] = producer
    if name in app.tasks:
        app.tasks[name].apply_async(kwargs=kwargs, task_id=task_id, **options, **reprs(kwargs))
    elif queue is not None and queue.startswith(settings_of(app).pipeline.queues.node_prefix):
        # through the anonymous exchange straight onto the node's list: nothing to declare
        # (declaring each of a whole machine's queues cost more than the messages)
        options["declare"] = []
        # nobody reads a job's node task's result (the node answers on its stream): no
        # subscription to it either, which a broker outage would make fail on its own
        options["ignore_result"] = True
        app.send_task(name, kwargs=kwargs, task_id=task_id, **options, **reprs(kwargs))
    elif name in SENT_BY_NAME:  # a sender that registers no task: its queue by name
        names = settings_of(app).pipeline.queues.model_dump()
        options["queue"] = queue or names[SENT_BY_NAME[name]]
        options["ignore_result"] = True  # as the task itself has it (keep_result unset)
        app.send_task(name, kwargs=kwargs, task_id=task_id, **options, **reprs(kwargs))
    else:
        raise PermanentError(f"no task {name!r} to send (and {queue!r} is not a node queue)")


def dispatch_node(app: Celery, store: Store, node: str, name: str, kwargs: dict[str, Any]) -> str:
    """Send node task ``name`` to ``node``'s queue, noted in the ledger like every message
    (the node's answer crosses it out: its task names the node task's id)."""
    return dispatch_nodes(app, store, [(node, name, kwargs)])[0]


def dispatch_nodes(
    app: Celery, store: Store, sends: Sequence[tuple[str, str, dict[str, Any]]]
) -> list[str]:
    """Send each ``(node, task name, kwargs)`` to its node's queue; return their task ids.

    The sends of one task with the same arguments go out as one signed manifest
    (:mod:`pipeline.platform.fanout`): one signature, and one copy a node, pushed in
    pipelined batches. Every copy is noted in the ledger first (a thousand a round trip)
    under its own id, with its node's whole arguments. Should publishing fail, every
    entry is crossed out and the error raised, as :func:`dispatch` does: copies already
    published are answered, and their answers find no entry (a copy's path), so nothing
    is counted twice.
    """
    prefix = settings_of(app).pipeline.queues.node_prefix
    for node, _name, _kwargs in sends:
        node_queue(node)  # refuses a hostname that cannot name a queue
    now = time.time()
    manifests = [fanout.manifest(app, group, first_sent=now) for group in fanout.grouped(sends)]
    copies = [m.copies(prefix) for m in manifests]
    notes = []
    for made, group_copies in zip(manifests, copies, strict=True):
        kwargs = made.group.kwargs
        for node, (task_id, queue, _raw) in zip(made.group.hosts, group_copies, strict=True):
            notes.append((task_id, made.group.name, {"hostname": node, **kwargs}, queue))
    if not notes:
        return []
    resend_after_s = settings_of(app).pipeline.resend_after
    store.ledger.note_all(notes, now=now, resend_after_s=resend_after_s)
    store.answers.await_({kwargs["hostname"] for _, _, kwargs, _ in notes}, now)
    try:
        publish(app, copies)
    except BaseException:
        try:
            store.ledger.done_all([task_id for task_id, *_ in notes])
        except StoreUnavailable as exc:  # they will be sent later: tasks are idempotent
            log.warning("sending node tasks failed, and so did crossing them out: %s", exc)
        raise
    if nodework.log.isEnabledFor(logging.INFO):
        for task_id, name, kwargs, _queue in notes:
            nodework.trace("sent", name, kwargs.get("jobid"), kwargs["hostname"], task_id)
    return [task_id for task_id, *_ in notes]


def resend_copies(app: Celery, groups: Sequence[tuple[str, fanout.Group, float]]) -> None:
    """Send again the copies of manifests whose ledger entries are due: each ``(manifest
    id, group, when first sent)`` as that manifest again, signed once for the group's
    nodes alone, each copy under the id it was noted under (the caller postponed the
    entries first)."""
    prefix = settings_of(app).pipeline.queues.node_prefix
    made = [fanout.manifest(app, group, mid, first_sent=when) for mid, group, when in groups]
    store_of(app).answers.await_({h for _, group, _ in groups for h in group.hosts}, time.time())
    publish(app, [m.copies(prefix) for m in made])


def publish(app: Celery, copies: Sequence[Sequence[tuple[str, str, bytes]]]) -> None:
    """Push manifests' copies onto their queues through ``app``'s producer
    (:func:`pipeline.platform.fanout.push`); a broker that is down is a store outage."""
    retyped: list[str] = []
    with app.producer_or_acquire() as producer:
        errors = (*producer.connection.connection_errors, OperationalError)
        try:
            for group_copies in copies:
                retyped += fanout.push(producer, group_copies)
        except errors as exc:
            raise StoreUnavailable(f"sending node tasks: the broker: {exc}") from exc
    if retyped:
        _flag_retyped(app, retyped)


def _flag_retyped(app: Celery, queues: Sequence[str]) -> None:
    """Flag the node of each queue a send found not a list, and deleted (``status`` names
    it, a dead letter says it)."""
    store, prefix, now = store_of(app), settings_of(app).pipeline.queues.node_prefix, time.time()
    for queue in queues:
        host = queue.removeprefix(prefix)
        why = f"its task queue {queue} was not a list: deleted, and the task sent to it again"
        log.error("node %s: %s", host, why)
        store.answers.flag(host, why, now)
        store.dead_letters.add(f"{host}:{queue}", "", why)


def reprs(kwargs: dict[str, Any]) -> dict[str, str]:
    """``apply_async`` options that name a message's arguments for monitors (Flower,
    ``celery inspect``): built-in ``repr``, cut to Celery's own limit. Left to Celery,
    its pure-Python ``saferepr`` costs several times as much a message — every sender
    pays it, the watcher once per Workflow it observes."""
    text, limit = repr(kwargs), AMQP.kwargsrepr_maxsize
    shown = text if len(text) <= limit else text[: limit - 3] + "..."
    return {"argsrepr": "()", "kwargsrepr": shown}

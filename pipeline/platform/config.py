"""Celery configuration derived from :class:`~pipeline.settings.Settings`."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from kombu.entity import Exchange, Queue

from pipeline.model.node_client import client_name
from pipeline.platform.broker import PREFIX_OPTION, transport_for
from pipeline.platform.onepool import ONE_CONNECTION_OPTION
from pipeline.platform.routing import QueueRouter
from pipeline.platform.signing import signing_config
from pipeline.settings import Settings

#: Hard time limit of a task (s).
TASK_TIME_LIMIT_S = 300

#: A node worker's blocking read waits this long for a message before it asks again (s).
#: Also how long the worker takes to stop: kombu waits for the read in flight to
#: answer, so that a message it took is delivered and not lost.
NODE_BRPOP_S = 5


def celery_config(settings: Settings) -> dict[str, Any]:
    """Return the Celery settings for ``settings``."""
    queues = settings.pipeline.queues
    transport: dict[str, Any] = {
        # One delivery guarantee, the ledger's (pipeline.store.ledger): every message is
        # noted before it is sent and sent again until its task has an outcome. Kombu's
        # ack emulation — each delivery written to an unacked hash and index in one
        # transaction, cleared in another at the ack, swept for a dead worker's — would
        # be a second, slower one (its visibility timeout) costing two transactions a
        # task, and a shared hash whose entries are restored onto any queue. Without it a
        # worker keeps what it took in memory until the ack, and at shutdown puts back
        # what it did not run; a worker killed outright leaves that to the ledger.
        "ack_emulation": False,
    }
    if settings.pipeline.sentinel_master:
        transport["master_name"] = settings.pipeline.sentinel_master
    broker_transport = dict(transport, **{PREFIX_OPTION: settings.pipeline.key_prefix})
    return {
        "broker_url": settings.pipeline.broker_url,
        # kombu's Redis transport, sharing one client per channel (pipeline/platform/broker.py)
        "broker_transport": transport_for(settings.pipeline.broker_url),
        "result_backend": settings.pipeline.result_backend or settings.pipeline.broker_url,
        "broker_transport_options": broker_transport,
        # a message Celery cannot decode or run is set aside, not only logged
        "worker_consumer": "pipeline.platform.consumer:Consumer",
        # beat fires only while it holds the beat lease: run a standby (platform/beat.py)
        "beat_scheduler": "pipeline.platform.beat:LeaderScheduler",
        "result_backend_transport_options": dict(transport),
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        # Two messages reserved per pool thread: when a thread ends a task, its next one
        # is already in the pool, instead of waiting for a new fetch on the consumer
        # thread, the one that bounds a busy worker (benchmarks.lifecycle shows the
        # difference). Tasks last milliseconds, so a reserved message waits
        # milliseconds; one reserved by a worker that stops is put back like one it runs.
        "worker_prefetch_multiplier": 2,
        "task_time_limit": TASK_TIME_LIMIT_S,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        # No "task-sent" events: each would cost every sender (the watcher, the hooks)
        # one more publish per task than the task itself — measured, the larger part of
        # the watcher's send. The ledger holds what was sent and not yet done.
        "task_send_sent_event": False,
        # No task events until a monitor asks (Celery's default): each task's "received",
        # "started" and "succeeded" cost the worker's consumer thread — the one that
        # hands every message to the pool — about 1.6 synchronous publishes a task, a
        # sixth of the worker's CPU per job with nobody listening. Flower turns them on
        # while it runs (its enable_events option, on by default); by hand:
        # `celery -A pipeline.app control enable_events`, or start a worker with -E.
        # ``[pipeline] task_events``: on from start, for a monitor that may not ask (Flower
        # without the management key, coral2-pipeline flower)
        "worker_send_task_events": settings.pipeline.task_events,
        "result_expires": 3600,
        "broker_connection_retry_on_startup": True,
        "task_queues": [
            # each queue its own exchange and key: a bare Queue(name) would bind all three
            # to the default exchange with the default key, so every message would land
            # in the lifecycle queue whatever the router said
            Queue(name, Exchange(name, type="direct"), routing_key=name)  # type: ignore[no-untyped-call]
            for name in (queues.lifecycle, queues.timeouts, queues.housekeeping)
        ],
        "task_default_queue": queues.lifecycle,
        "task_routes": (
            QueueRouter(
                {
                    "lifecycle": queues.lifecycle,
                    "timeouts": queues.timeouts,
                    "housekeeping": queues.housekeeping,
                },
                queues.node_prefix,
            ),
        ),
        # the whole settings tree, typed: tasks read it as PipelineTask.settings
        "coral2_settings": settings,
        **signing_config(settings.pipeline),
    }


def node_worker_config(settings: Settings, hosts: list[str]) -> dict[str, Any]:
    """The Celery settings of a node worker: :func:`celery_config`, made lean for a
    process that runs on every compute — two Redis connections (its blocking read and
    one for everything else, :mod:`pipeline.platform.onepool`) and no periodic traffic
    but that read and its own heartbeat (:mod:`node_worker.heartbeat`). The worker also
    runs without Celery's gossip, mingle and heartbeats (``node_worker.app``)."""
    config = celery_config(settings)
    config["broker_transport_options"] = dict(
        config["broker_transport_options"],
        **{
            ONE_CONNECTION_OPTION: True,
            # one read per NODE_BRPOP_S when idle, not one a second
            "polling_interval": NODE_BRPOP_S,
            # its connections named for the nodes it serves, for an operator reading
            # CLIENT LIST (its heartbeat says it runs: node_worker.heartbeat)
            "client_name": client_name(hosts),
            # one list per queue, not one per priority: nothing sends node work with a
            # priority, and its Redis user may reach its queue's own key only
            "priority_steps": [0],
        },
    )
    backend = config["result_backend"]
    if urlparse(backend).scheme == "redis":
        config["result_backend"] = "pipeline.platform.onepool:OnePoolBackend+" + backend
    prefix = settings.pipeline.queues.node_prefix
    config.update(
        # its own queues only, declared by nobody: the management side sends to them
        # through the anonymous exchange, so no binding is read or written
        task_queues=[
            Queue(q, Exchange(q, type="direct"), routing_key=q, no_declare=True)  # type: ignore[no-untyped-call]
            for q in (prefix + host for host in hosts)
        ],
        # no remote control: its broadcast queue is one more connection, and a
        # subscription every node's worker would hold at the broker
        worker_enable_remote_control=False,
        worker_send_task_events=False,
    )
    return config

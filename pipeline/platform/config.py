"""Celery configuration derived from :class:`~pipeline.settings.Settings`."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from kombu.entity import Exchange, Queue

from pipeline.model.node_client import client_name
from pipeline.platform.broker import OWN_UNACKED_OPTION, PREFIX_OPTION, transport_for
from pipeline.platform.onepool import ONE_CONNECTION_OPTION
from pipeline.platform.routing import QueueRouter
from pipeline.platform.signing import signing_config
from pipeline.settings import Settings

#: Hard time limit of a task (s); the broker's visibility timeout must exceed it.
TASK_TIME_LIMIT_S = 300
VISIBILITY_TIMEOUT_S = 3600  # the default of ``pipeline.visibility_timeout``

#: A node worker's blocking read waits this long for a message before it asks again (s).
#: Also how long the worker takes to stop: kombu waits for the read in flight to
#: answer, so that a message it took is delivered and not lost.
NODE_BRPOP_S = 5


def celery_config(settings: Settings) -> dict[str, Any]:
    """Return the Celery settings for ``settings``."""
    queues = settings.pipeline.queues
    visibility = settings.pipeline.visibility_timeout
    transport: dict[str, Any] = {
        "visibility_timeout": visibility,
        "unacked_restore_interval": 10,
        "unacked_restore_throttle": 1,
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
        "visibility_timeout": visibility,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        # Two messages reserved per pool thread: when a thread ends a task, its next one
        # is already in the pool, instead of waiting for the ack, a new fetch and the
        # unacked bookkeeping — three round trips on the consumer thread, the one that
        # bounds a busy worker (benchmarks.lifecycle shows the difference; 4 is no
        # better than 2). Tasks last milliseconds, so a reserved message waits
        # milliseconds; one reserved by a worker that dies is restored like one it runs.
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


def unacked_keys(settings: Settings, hosts: list[str]) -> tuple[str, str, str]:
    """The unacked hash, index and mutex of the node worker serving ``hosts`` (named after
    the first): ``node.<host>:unacked``, ``:unacked_index``, ``:unacked_mutex``."""
    base = settings.pipeline.queues.node_prefix + hosts[0]
    return f"{base}:unacked", f"{base}:unacked_index", f"{base}:unacked_mutex"


def node_worker_config(settings: Settings, hosts: list[str]) -> dict[str, Any]:
    """The Celery settings of a node worker: :func:`celery_config`, made lean for a
    process that runs on every compute — two Redis connections (its blocking read and
    one for everything else, :mod:`pipeline.platform.onepool`) and no periodic traffic
    but that read. The worker also runs without gossip, mingle and heartbeats
    (``node_worker.app``)."""
    config = celery_config(settings)
    config["broker_transport_options"] = dict(
        config["broker_transport_options"],
        **{
            ONE_CONNECTION_OPTION: True,
            # one read per NODE_BRPOP_S when idle, not one a second
            "polling_interval": NODE_BRPOP_S,
            # its delivered messages are kept in unacked keys of its own, which its
            # Redis user alone may write, and swept by itself: never in kombu's shared
            # hash, whose entries the management workers restore onto any queue
            OWN_UNACKED_OPTION: True,
            # its connections named for the nodes it serves: status finds the node
            # workers connected in CLIENT LIST, with no heartbeat of theirs
            "client_name": client_name(hosts),
            "unacked_key": unacked_keys(settings, hosts)[0],
            "unacked_index_key": unacked_keys(settings, hosts)[1],
            "unacked_mutex_key": unacked_keys(settings, hosts)[2],
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

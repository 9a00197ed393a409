"""Celery configuration derived from :class:`~pipeline.settings.Settings`."""

from __future__ import annotations

from typing import Any

from kombu.entity import Exchange, Queue

from pipeline.platform.broker import PREFIX_OPTION, transport_for
from pipeline.platform.routing import QueueRouter
from pipeline.platform.signing import signing_config
from pipeline.settings import Settings

#: Hard time limit of a task (s); the broker's visibility timeout must exceed it.
TASK_TIME_LIMIT_S = 300
VISIBILITY_TIMEOUT_S = 3600  # the default of ``pipeline.visibility_timeout``


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
        "worker_send_task_events": False,
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

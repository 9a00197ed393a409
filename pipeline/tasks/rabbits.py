"""Rabbit health as flux-coral2's FluxionRabbitManager keeps it, from Storage events.

``storage.observe`` (enqueued by the watcher on every Storage event, and for
every Storage when the watcher starts) re-reads the Storage and calls
:func:`tell_flux`: the pure rules of :mod:`pipeline.states.rabbits` decide
drains, ``badrabbit`` properties and ssd status against what Flux was last
told, and the store sends the difference with the new record in one step.
"""

from __future__ import annotations

import logging
from typing import Any

from pipeline.errors import ConfigError, InputError
from pipeline.model.jgf import default_cluster_name, excluded_hosts
from pipeline.model.rabbitmap import RabbitMapping
from pipeline.model.resource_set import resource_set_from_config
from pipeline.platform.task import PipelineTask, pipeline_task
from pipeline.settings import Settings
from pipeline.states.actions import TellFlux
from pipeline.states.rabbits import (
    RabbitPolicy,
    decide,
    offline_computes,
    on_storage,
    storage_status,
)
from pipeline.tasks.dws import NO_JOB, act, mapping_of

log = logging.getLogger("coral2_pipeline.rabbits")


def _policy(settings: Settings) -> RabbitPolicy:
    queues = settings.pipeline.drain_queues
    drainable: frozenset[str] | None = None
    if queues:
        rset = resource_set_from_config(settings.resource.config)
        drainable = frozenset(
            host for host in rset.unique_hosts() if set(queues) <= set(rset.properties_of(host))
        )
        if not drainable:
            raise ConfigError(f"No resources found associated with queues {queues}")
    return RabbitPolicy(
        drain_compute_nodes=settings.rabbit.drain_compute_nodes,
        soft_drain=settings.rabbit.soft_drain,
        drainable=drainable,
    )


def _excluded(settings: Settings, mapping: RabbitMapping) -> frozenset[str]:
    exclude = settings.resource.exclude
    if not exclude:
        return frozenset()
    if settings.resource.config:
        hosts = resource_set_from_config(settings.resource.config).hosts
    else:
        hosts = [*mapping.computes, *mapping.rabbits]
    return frozenset(excluded_hosts(exclude, list(hosts)))


def ssd_paths(settings: Settings, mapping: RabbitMapping, rabbit: str) -> list[str]:
    """The ssd vertices dws2jgf gave ``rabbit``'s chassis."""
    cluster = settings.pipeline.cluster_name or default_cluster_name()
    k = list(mapping.rabbits).index(rabbit)
    return [f"/{cluster}/chassis{k}/ssd{i}" for i in range(settings.pipeline.chunks_per_nnf)]


def tell_flux(task: PipelineTask, name: str, storage: dict[str, Any]) -> list[str] | None:
    """Send Flux what changed in rabbit ``name``'s health (nothing when nothing did); return
    the kinds of messages sent (None: the health rules are off for it)."""
    settings = task.settings
    path = settings.rabbit.mapping
    if not path:
        log.error("Storage %s: rabbit.mapping is not configured; rabbit health is off", name)
        return None
    mapping = mapping_of(path)
    if name not in mapping.rabbits:
        log.error("Storage %s is not a rabbit of %s: its health changes nothing", name, path)
        return None
    try:
        policy = _policy(settings)
        excluded = _excluded(settings, mapping)
    except (ConfigError, InputError) as exc:
        log.error("Storage %s: %s", name, exc)
        return None
    computes = [h for h in mapping.computes_of(name) if h not in excluded]
    status = storage_status(storage)
    offline = offline_computes(storage)
    paths = ssd_paths(settings, mapping, name)
    epoch = task.store.resource_log.epoch()
    version = str((storage.get("metadata") or {}).get("resourceVersion") or "")
    told = task.store.told.get(name)
    change = decide(status, offline, computes, paths, policy, told, epoch, version)
    actions = on_storage(name, told, change)
    act(task, NO_JOB, actions)
    kinds = sorted({m.kind for a in actions if isinstance(a, TellFlux) for m in a.change.messages})
    if kinds:
        log.warning(
            "rabbit %s is %s (%d computes not Ready): told Flux %s",
            name,
            status or "without status",
            len(offline),
            ", ".join(kinds),
        )
    return kinds


@pipeline_task("storage.resync", queue="housekeeping", max_attempts=3)
def resync(task: PipelineTask) -> int:
    """Apply the health rules to every Storage (one list); return how many told Flux anything.

    Beat runs it every 30 s. coral2_dws processes every Storage once at start so
    that the ssds of Ready rabbits come up; this does the same for a Flux that
    restarted (its ``restart`` starts a new incarnation, told nothing yet) and
    catches a Storage event the watcher lost. A rabbit with nothing new costs
    one Redis round trip.
    """
    storages, _ = task.dws.list_objects("storages")
    told = 0
    for storage in storages:
        name = (storage.get("metadata") or {}).get("name")
        if not name:
            continue
        told += bool(tell_flux(task, str(name), storage))
    return told
